// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/csv.h"

#include <cerrno>
#include <cmath>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ringsched {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Splits one CSV line; double quotes group a field and "" inside quotes is a literal quote.
std::vector<std::string> split_line(const std::string& line, const std::string& name, int lineno) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(trim(field));
      field.clear();
    } else {
      field += c;
    }
  }
  if (quoted) throw InputError(name, lineno, "unterminated quoted field");
  out.push_back(trim(field));
  return out;
}

}  // namespace

CsvFile CsvFile::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

CsvFile CsvFile::parse(const std::string& text, const std::string& name) {
  CsvFile f;
  f.path_ = name;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++lineno;
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> fields = split_line(t, name, lineno);
    if (!have_header) {
      f.header_ = fields;
      have_header = true;
      continue;
    }
    if (fields.size() != f.header_.size())
      throw InputError(name, lineno, "expected " + std::to_string(f.header_.size()) +
                                         " fields (" + std::to_string(f.header_.size()) +
                                         " columns in the header), found " +
                                         std::to_string(fields.size()));
    f.rows_.push_back(CsvRow{lineno, std::move(fields)});
  }
  if (!have_header) throw InputError(name, 0, "empty file: no header line");
  return f;
}

int CsvFile::column(const std::string& name) const {
  for (size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return static_cast<int>(i);
  return -1;
}

int CsvFile::require_column(const std::string& name) const {
  int c = column(name);
  if (c < 0) throw InputError(path_, 1, "missing column '" + name + "'");
  return c;
}

void CsvFile::fail(const CsvRow& row, const std::string& what) const {
  throw InputError(path_, row.line, what);
}

const std::string& CsvFile::str(const CsvRow& row, int col) const {
  return row.fields.at(static_cast<size_t>(col));
}

double CsvFile::number(const CsvRow& row, int col) const {
  const std::string& s = str(row, col);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  // strtod also reads hexadecimal ("0x10" = 16): no CSV of ours means that.
  if (s.empty() || end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v) ||
      s.find_first_of("xX") != std::string::npos)
    fail(row, "column '" + header_[col] + "': not a finite number: '" + s + "'");
  return v;
}

long CsvFile::integer(const CsvRow& row, int col) const {
  const std::string& s = str(row, col);
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    fail(row, "column '" + header_[col] + "': not an integer: '" + s + "'");
  return v;
}

bool CsvFile::boolean(const CsvRow& row, int col) const {
  std::string s = str(row, col);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "yes" || s == "true" || s == "y") return true;
  if (s == "0" || s == "no" || s == "false" || s == "n" || s.empty()) return false;
  fail(row, "column '" + header_[col] + "': not a boolean (1/0/yes/no/true/false): '" + s + "'");
}

}  // namespace ringsched
