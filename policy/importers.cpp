// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/importers.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "ringsched/csv.h"

namespace ringsched {
namespace {

std::string lower_alnum(const std::string& s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string batch_suffix(double batch) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-b%.0f", batch);
  return buf;
}

const std::regex kGavelName(R"(^\s*([A-Za-z0-9\- ]+?)\s*(\(batch size (\d+)\))?\s*$)");

void note_skip(ImportStats* stats, const std::string& why) {
  if (!stats) return;
  stats->skipped++;
  if (stats->skipped_why.find(why) == std::string::npos)
    stats->skipped_why += (stats->skipped_why.empty() ? "" : "; ") + why;
}

}  // namespace

std::string gavel_model_id(const std::string& job_type) {
  std::smatch m;
  if (!std::regex_match(job_type, m, kGavelName))
    throw InputError("gavel job type '" + job_type + "': expected 'Name' or 'Name (batch size N)'");
  std::string id = lower_alnum(m[1].str());
  if (id.empty()) throw InputError("gavel job type '" + job_type + "': empty name");
  if (m[3].matched) id += "-b" + m[3].str();
  return id;
}

double gavel_batch(const std::string& job_type) {
  std::smatch m;
  if (std::regex_match(job_type, m, kGavelName) && m[3].matched) return std::atof(m[3].str().c_str());
  return 0;
}

ProfileTable import_gavel_throughputs(const std::string& path, ImportStats* stats) {
  CsvFile f = CsvFile::read(path);
  int c_job = f.require_column("job_type");
  int c_scale = f.require_column("scale_factor");
  int c_worker = f.require_column("worker_type");
  int c_tput = f.require_column("throughput_steps_per_s");
  ProfileTable table;
  for (const CsvRow& row : f.rows()) {
    if (stats) stats->rows++;
    const std::string& job = f.str(row, c_job);
    ProfilePoint p;
    try {
      p.model = gavel_model_id(job);
    } catch (const InputError& e) {
      f.fail(row, e.what());
    }
    p.global_batch = gavel_batch(job);
    long scale = f.integer(row, c_scale);
    if (scale <= 0 || scale > 1024) f.fail(row, "scale_factor must be 1..1024");
    p.num_gpus = static_cast<int>(scale);
    p.gpu_type = normalize_type(f.str(row, c_worker));
    if (p.gpu_type.empty()) f.fail(row, "empty worker_type");
    // "v100_unconsolidated" is the same GPU with the workers spread over servers: a locality
    // variant, not a GPU type. The profile format keeps the consolidated (one-server) rows.
    const std::string spread = "_unconsolidated";
    if (p.gpu_type.size() > spread.size() &&
        p.gpu_type.compare(p.gpu_type.size() - spread.size(), spread.size(), spread) == 0) {
      note_skip(stats, "workers spread over servers (_unconsolidated rows)");
      continue;
    }
    p.iters_per_s = f.number(row, c_tput);
    if (p.iters_per_s < 0) f.fail(row, "negative throughput");
    if (p.iters_per_s == 0) {
      note_skip(stats, "zero throughput (not measured)");
      continue;
    }
    table.add(p);
    if (stats) stats->points++;
  }
  return table;
}

ProfileTable import_elasticflow_dir(const std::string& dir, const std::string& gpu_type,
                                    ImportStats* stats) {
  DIR* d = opendir(dir.c_str());
  if (!d) throw InputError(dir, 0, "cannot open directory");
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".csv") == 0) files.push_back(n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(dir, 0, "no .csv files");
  ProfileTable table;
  for (const std::string& file : files) {
    std::string path = dir + "/" + file;
    std::string model = lower_alnum(file.substr(0, file.size() - 4));
    CsvFile f = CsvFile::read(path);
    int c_batch = f.require_column("global_batch_size");
    for (const CsvRow& row : f.rows()) {
      if (stats) stats->rows++;
      double batch = f.number(row, c_batch);
      if (batch <= 0) f.fail(row, "global_batch_size must be positive");
      for (size_t c = 0; c < f.header().size(); ++c) {
        if (static_cast<int>(c) == c_batch) continue;
        char* end = nullptr;
        long n = std::strtol(f.header()[c].c_str(), &end, 10);
        if (*end != '\0' || n <= 0) f.fail(row, "header column '" + f.header()[c] + "' is not a GPU count");
        std::string cell = f.str(row, static_cast<int>(c));
        std::string lc = cell;
        for (char& ch : lc) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (cell.empty() || lc == "nan") {
          note_skip(stats, "empty or nan cell (not measured)");
          continue;
        }
        double v = f.number(row, static_cast<int>(c));
        if (v < 0) f.fail(row, "negative throughput in column " + f.header()[c]);
        if (v == 0) {
          note_skip(stats, "zero cell (not measured)");
          continue;
        }
        ProfilePoint p{model + batch_suffix(batch), normalize_type(gpu_type), static_cast<int>(n),
                       batch, v};
        table.add(p);
        if (stats) stats->points++;
      }
    }
  }
  return table;
}

}  // namespace ringsched
