// SPDX-License-Identifier: GPL-2.0-or-later
// Minimal CSV reading for the project's own formats and the reference tables: quoted fields,
// '#' comment lines, blank lines skipped, and every error naming file and line.
#pragma once

#include <string>
#include <vector>

#include "ringsched/model.h"

namespace ringsched {

struct CsvRow {
  int line = 0;                     // 1-based line number in the file
  std::vector<std::string> fields;  // trimmed
};

class CsvFile {
 public:
  // Reads the whole file; the first non-comment line is the header. Throws InputError if the file
  // cannot be opened or has no header.
  static CsvFile read(const std::string& path);
  static CsvFile parse(const std::string& text, const std::string& name);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<CsvRow>& rows() const { return rows_; }
  // Index of a header column, or -1.
  int column(const std::string& name) const;
  // Index of a header column; throws InputError naming the file if it is missing.
  int require_column(const std::string& name) const;

  // Typed field access; throw InputError(path, row.line, "column X: ...") on bad values.
  const std::string& str(const CsvRow& row, int col) const;
  double number(const CsvRow& row, int col) const;  // finite
  long integer(const CsvRow& row, int col) const;
  bool boolean(const CsvRow& row, int col) const;   // 1/0/yes/no/true/false
  [[noreturn]] void fail(const CsvRow& row, const std::string& what) const;

 private:
  std::string path_;
  std::vector<std::string> header_;
  std::vector<CsvRow> rows_;
};

}  // namespace ringsched
