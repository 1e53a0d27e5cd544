// SPDX-License-Identifier: GPL-2.0-or-later
#include "trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "ringsched/csv.h"
#include "ringsched/importers.h"

using ringsched::CsvFile;
using ringsched::CsvRow;
using ringsched::InputError;

namespace ringsim {

void ImportReport::skip(const std::string& why) {
  ++skipped;
  // Keep one counter per reason, in first-seen order, inside the text itself.
  std::vector<std::pair<std::string, int>> parts;
  std::istringstream in(skipped_why);
  std::string item;
  while (std::getline(in, item, ';')) {
    if (!item.empty() && item[0] == ' ') item.erase(0, 1);
    size_t colon = item.find(" rows: ");
    if (colon == std::string::npos) continue;
    parts.emplace_back(item.substr(colon + 7), std::atoi(item.c_str()));
  }
  bool found = false;
  for (auto& p : parts)
    if (p.first == why) { ++p.second; found = true; }
  if (!found) parts.emplace_back(why, 1);
  skipped_why.clear();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) skipped_why += "; ";
    skipped_why += std::to_string(parts[i].second) + " rows: " + parts[i].first;
  }
}

Trace Trace::load_csv(const std::string& path) {
  CsvFile f = CsvFile::read(path);
  const int c_id = f.require_column("job_id"), c_submit = f.require_column("submit_s"),
            c_model = f.require_column("model"), c_gpus = f.require_column("gpus"),
            c_iters = f.require_column("iterations");
  const int c_min = f.column("min_gpus"), c_max = f.column("max_gpus"), c_el = f.column("elastic"),
            c_user = f.column("user"), c_spb = f.column("spb");
  Trace t;
  t.source = path;
  std::set<std::string> ids;
  double last_submit = 0;
  for (const CsvRow& row : f.rows()) {
    TraceJob j;
    j.line = row.line;
    j.id = f.str(row, c_id);
    if (j.id.empty()) f.fail(row, "empty job_id");
    if (!ids.insert(j.id).second) f.fail(row, "job_id '" + j.id + "' repeats");
    j.submit_s = f.number(row, c_submit);
    if (j.submit_s < 0) f.fail(row, "negative submit_s");
    if (j.submit_s > kMaxSubmitS)
      f.fail(row, "submit_s above 1e12 s (Unix times in seconds fit; in milliseconds they do not)");
    if (!t.jobs.empty() && j.submit_s < last_submit) {
      std::ostringstream m;
      m << "submit_s " << j.submit_s << " is before the previous row's " << last_submit
        << " (a trace must be sorted by submit time)";
      f.fail(row, m.str());
    }
    last_submit = j.submit_s;
    j.model = f.str(row, c_model);
    if (j.model.empty()) f.fail(row, "empty model");
    long g = f.integer(row, c_gpus);
    if (g < 1 || g > 1000000) f.fail(row, "gpus must be 1..1000000");
    j.gpus = static_cast<int>(g);
    j.iterations = f.number(row, c_iters);
    if (!(j.iterations > 0)) f.fail(row, "iterations must be positive");
    j.min_gpus = j.max_gpus = j.gpus;
    if (c_min >= 0 && !f.str(row, c_min).empty()) {
      long v = f.integer(row, c_min);
      if (v < 1 || v > j.gpus) f.fail(row, "min_gpus must be 1..gpus");
      j.min_gpus = static_cast<int>(v);
    }
    if (c_max >= 0 && !f.str(row, c_max).empty()) {
      long v = f.integer(row, c_max);
      if (v < j.gpus || v > 1000000) f.fail(row, "max_gpus must be gpus..1000000");
      j.max_gpus = static_cast<int>(v);
    }
    j.elastic = c_el >= 0 && !f.str(row, c_el).empty() ? f.boolean(row, c_el) : false;
    j.elastic = j.resizable();
    if (!j.elastic) j.min_gpus = j.max_gpus = j.gpus;
    if (c_user >= 0) j.user = f.str(row, c_user);
    j.spb = c_spb >= 0 && !f.str(row, c_spb).empty() ? f.boolean(row, c_spb) : false;
    t.jobs.push_back(j);
  }
  if (t.jobs.empty()) throw InputError(path, 0, "trace has no jobs");
  return t;
}

void Trace::save_csv(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw InputError(path, 0, "cannot write");
  out << "job_id,submit_s,model,gpus,iterations,min_gpus,max_gpus,elastic,user,spb\n";
  char buf[64];
  for (const TraceJob& j : jobs) {
    out << j.id << ',';
    std::snprintf(buf, sizeof buf, "%.3f", j.submit_s);
    out << buf << ',' << j.model << ',' << j.gpus << ',';
    std::snprintf(buf, sizeof buf, "%.0f", std::max(1.0, std::round(j.iterations)));
    out << buf << ',' << j.min_gpus << ',' << j.max_gpus << ',' << (j.elastic ? 1 : 0) << ','
        << j.user << ',' << (j.spb ? 1 : 0) << '\n';
  }
  if (!out) throw InputError(path, 0, "write failed");
}

namespace {

int elastic_max(int gpus, const ImportOptions& opt) {
  int cap = ringsched::floor_power_of_two(std::max(1, opt.max_gpus_cap));
  return std::max(gpus, cap);
}

void finish_job(TraceJob& j, const ImportOptions& opt, std::mt19937_64& rng) {
  j.elastic = opt.elastic;
  if (j.elastic) {
    j.min_gpus = 1;
    j.max_gpus = elastic_max(j.gpus, opt);
  }
  j.elastic = j.resizable();
  if (!j.elastic) j.min_gpus = j.max_gpus = j.gpus;
  if (opt.spb_fraction > 0) j.spb = std::uniform_real_distribution<double>(0, 1)(rng) < opt.spb_fraction;
}

void sort_and_limit(Trace& t, const ImportOptions& opt) {
  std::stable_sort(t.jobs.begin(), t.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  if (opt.limit > 0 && static_cast<long>(t.jobs.size()) > opt.limit) t.jobs.resize(opt.limit);
  if (!t.jobs.empty()) {
    double t0 = t.jobs.front().submit_s;
    for (TraceJob& j : t.jobs) j.submit_s -= t0;
  }
}

std::vector<std::string> drawable_models(const ringsched::ThroughputModel& tm, const ImportOptions& opt) {
  if (opt.ref_type.empty()) throw InputError("a reference GPU type is needed (--ref-type)");
  std::vector<std::string> models;
  const std::vector<std::string>& wanted = opt.models.empty() ? tm.table().models() : opt.models;
  for (const std::string& m : wanted) {
    if (tm.knows(m, opt.ref_type)) models.push_back(m);
    else if (!opt.models.empty())
      throw InputError("model '" + m + "' has no profile on reference type " + opt.ref_type);
  }
  if (models.empty()) throw InputError("no profiled model on reference type " + opt.ref_type);
  return models;
}

}  // namespace

Trace import_gavel_trace(const std::string& path, const ImportOptions& opt, ImportReport* rep) {
  CsvFile f = CsvFile::read(path);
  const int c_type = f.require_column("job_type"), c_steps = f.require_column("total_steps"),
            c_arr = f.require_column("arrival_time_s"), c_scale = f.require_column("scale_factor");
  const int c_vc = f.column("vc");
  std::mt19937_64 rng(opt.seed);
  Trace t;
  t.source = path;
  ImportReport local;
  ImportReport& r = rep ? *rep : local;
  for (const CsvRow& row : f.rows()) {
    ++r.rows;
    TraceJob j;
    try {
      j.model = ringsched::gavel_model_id(f.str(row, c_type));
    } catch (const InputError& e) {
      f.fail(row, e.what());
    }
    j.iterations = f.number(row, c_steps);
    if (j.iterations <= 0) f.fail(row, "total_steps must be positive");
    j.submit_s = f.number(row, c_arr);
    if (j.submit_s < 0) f.fail(row, "negative arrival_time_s");
    long g = f.integer(row, c_scale);
    if (g < 1 || g > 1000000) f.fail(row, "scale_factor must be 1..1000000");
    j.gpus = static_cast<int>(g);
    j.id = "g" + std::to_string(row.line);
    if (c_vc >= 0) j.user = f.str(row, c_vc);
    j.iterations *= 1.0;  // total_steps are iterations already
    finish_job(j, opt, rng);
    t.jobs.push_back(j);
  }
  sort_and_limit(t, opt);
  r.jobs = static_cast<int>(t.jobs.size());
  return t;
}

Trace import_duration_trace(const std::string& path, const ringsched::ThroughputModel& tm,
                            const ImportOptions& opt, ImportReport* rep) {
  CsvFile f = CsvFile::read(path);
  int c_dur = f.column("duration");
  if (c_dur < 0) c_dur = f.column("duration_s");
  int c_gpus = f.column("num_gpu");
  if (c_gpus < 0) c_gpus = f.column("num_gpus");
  if (c_dur < 0 || c_gpus < 0)
    throw InputError(path, 1, "expected columns duration (or duration_s) and num_gpu (or num_gpus)");
  int c_submit = f.column("submission_time");
  if (c_submit < 0) c_submit = f.column("submit_s");
  const int c_id = f.column("job_id");
  if (c_submit < 0 && !(opt.jobs_per_hour > 0))
    throw InputError(path, 1, "no submission_time column: give an arrival rate (--jobs-per-hour)");
  std::vector<std::string> models = drawable_models(tm, opt);
  std::mt19937_64 rng(opt.seed);
  std::exponential_distribution<double> gap(c_submit < 0 ? opt.jobs_per_hour / 3600.0 : 1.0);
  double clock = 0;
  Trace t;
  t.source = path;
  ImportReport local;
  ImportReport& r = rep ? *rep : local;
  for (const CsvRow& row : f.rows()) {
    ++r.rows;
    if (opt.limit > 0 && c_submit < 0 && static_cast<long>(t.jobs.size()) >= opt.limit) break;
    double dur = f.number(row, c_dur);
    long g = f.integer(row, c_gpus);
    if (dur < 0) f.fail(row, "negative duration");
    if (g < 0 || g > 1000000) f.fail(row, "GPU count must be 0..1000000");
    // Draw before any skip so that the same seed gives the same model to the same row.
    const std::string& model = models[std::uniform_int_distribution<size_t>(0, models.size() - 1)(rng)];
    double submit = c_submit >= 0 ? f.number(row, c_submit) : (clock += gap(rng));
    if (submit < 0) f.fail(row, "negative submission time");
    if (g == 0) { r.skip("no GPUs"); continue; }
    if (dur == 0) { r.skip("zero duration"); continue; }
    double v = tm.iters_per_s(model, opt.ref_type, static_cast<int>(g));
    if (!(v > 0)) { r.skip("no throughput for the drawn model at this size"); continue; }
    TraceJob j;
    j.model = model;
    j.gpus = static_cast<int>(g);
    j.submit_s = submit;
    j.iterations = std::max(1.0, std::round(dur * opt.time_scale * v));
    j.id = c_id >= 0 && !f.str(row, c_id).empty() ? f.str(row, c_id) : "d" + std::to_string(row.line);
    finish_job(j, opt, rng);
    t.jobs.push_back(j);
  }
  sort_and_limit(t, opt);
  r.jobs = static_cast<int>(t.jobs.size());
  return t;
}

namespace {

// "2024-03-01T12:00:05" (sacct's default) -> seconds since the epoch, UTC; -1 if not a time
// (sacct prints "Unknown" or "None" for jobs that did not start or end).
double parse_slurm_time(const std::string& s) {
  struct tm tmv = {};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tmv);
  if (!end || *end) return -1;
  return static_cast<double>(timegm(&tmv));
}

// gres/gpu=N or gres/gpu:TYPE=N inside a TRES list; the typed entry wins (it names the type).
bool parse_gpu_tres(const std::string& tres, int* gpus, std::string* type) {
  *gpus = 0;
  type->clear();
  bool found = false;
  std::istringstream in(tres);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (key.rfind("gres/gpu", 0) != 0) continue;
    char* endp = nullptr;
    long n = std::strtol(val.c_str(), &endp, 10);
    if (endp == val.c_str() || *endp || n < 0 || n > 1000000) return false;
    if (key == "gres/gpu") {
      if (!found) *gpus = static_cast<int>(n);
      found = true;
    } else if (key.size() > 9 && key[8] == ':') {
      *type = ringsched::normalize_type(key.substr(9));
      *gpus = static_cast<int>(n);
      found = true;
    }
  }
  return true;
}

}  // namespace

Trace import_sacct(const std::string& path, const ringsched::ThroughputModel& tm,
                   const ImportOptions& opt, ImportReport* rep) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open");
  std::vector<std::string> models = drawable_models(tm, opt);
  std::mt19937_64 rng(opt.seed);
  ImportReport local;
  ImportReport& r = rep ? *rep : local;
  Trace t;
  t.source = path;
  std::string line;
  int lineno = 0;
  std::map<std::string, int> col;
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
      if (c == '|') { out.push_back(cur); cur.clear(); }
      else if (c != '\r') cur += c;
    }
    out.push_back(cur);
    return out;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields = split(line);
    if (col.empty()) {
      for (size_t i = 0; i < fields.size(); ++i) col[fields[i]] = static_cast<int>(i);
      for (const char* need : {"JobID", "Submit", "Start", "End"})
        if (!col.count(need))
          throw InputError(path, lineno, std::string("sacct header lacks ") + need +
                                             " (use sacct --parsable2 -o JobID,Submit,Start,End,AllocTRES)");
      if (!col.count("AllocTRES") && !col.count("ReqTRES"))
        throw InputError(path, lineno, "sacct header lacks AllocTRES or ReqTRES");
      continue;
    }
    if (fields.size() < col.size())
      throw InputError(path, lineno, "expected " + std::to_string(col.size()) + " '|'-separated fields, found " +
                                         std::to_string(fields.size()));
    ++r.rows;
    const std::string& id = fields[col["JobID"]];
    if (id.empty()) throw InputError(path, lineno, "empty JobID");
    if (id.find('.') != std::string::npos) { r.skip("job steps"); continue; }
    double submit = parse_slurm_time(fields[col["Submit"]]);
    double start = parse_slurm_time(fields[col["Start"]]);
    double end = parse_slurm_time(fields[col["End"]]);
    if (submit < 0) throw InputError(path, lineno, "Submit '" + fields[col["Submit"]] + "' is not a time");
    if (col.count("State")) {
      const std::string& st = fields[col["State"]];
      if (st.rfind("COMPLETED", 0) != 0 && st.rfind("TIMEOUT", 0) != 0 && st.rfind("CANCELLED", 0) != 0 &&
          st.rfind("FAILED", 0) != 0) { r.skip("not finished (State)"); continue; }
    }
    if (start < 0 || end < 0) { r.skip("not finished (no Start or End)"); continue; }
    if (end < start || start < submit) throw InputError(path, lineno, "times out of order (Submit <= Start <= End)");
    int gpus = 0;
    std::string type;
    std::string tres = col.count("AllocTRES") ? fields[col["AllocTRES"]] : "";
    if (tres.empty() && col.count("ReqTRES")) tres = fields[col["ReqTRES"]];
    if (!parse_gpu_tres(tres, &gpus, &type)) throw InputError(path, lineno, "bad gres/gpu count in '" + tres + "'");
    const std::string& model = models[std::uniform_int_distribution<size_t>(0, models.size() - 1)(rng)];
    if (gpus == 0) { r.skip("no GPUs"); continue; }
    if (end == start) { r.skip("zero run time"); continue; }
    std::string speed_type = !type.empty() && tm.knows(model, type) ? type : opt.ref_type;
    double v = tm.iters_per_s(model, speed_type, gpus);
    if (!(v > 0)) { r.skip("no throughput for the drawn model at this size"); continue; }
    TraceJob j;
    j.id = id;
    j.submit_s = submit;
    j.model = model;
    j.gpus = gpus;
    j.iterations = std::max(1.0, std::round((end - start) * opt.time_scale * v));
    if (col.count("User")) j.user = fields[col["User"]];
    finish_job(j, opt, rng);
    t.jobs.push_back(j);
  }
  if (col.empty()) throw InputError(path, 0, "empty file: no sacct header");
  sort_and_limit(t, opt);
  r.jobs = static_cast<int>(t.jobs.size());
  return t;
}

Trace synth_trace(const ringsched::ThroughputModel& tm, long jobs, double min_s, double max_s,
                  const ImportOptions& opt) {
  if (jobs < 1 || jobs > 10000000) throw InputError("synthetic trace: jobs must be 1..10000000");
  if (!(min_s > 0) || !(max_s >= min_s)) throw InputError("synthetic trace: need 0 < min_s <= max_s");
  if (!(opt.jobs_per_hour > 0)) throw InputError("synthetic trace: need an arrival rate (--jobs-per-hour)");
  std::vector<std::string> models = drawable_models(tm, opt);
  std::mt19937_64 rng(opt.seed);
  std::exponential_distribution<double> gap(opt.jobs_per_hour / 3600.0);
  std::uniform_real_distribution<double> u(0, 1);
  int max_log = 0;
  while ((2 << max_log) <= std::max(1, opt.max_gpus_cap)) ++max_log;
  Trace t;
  t.source = "synthetic";
  double clock = 0;
  for (long i = 0; i < jobs; ++i) {
    TraceJob j;
    j.id = "s" + std::to_string(i);
    j.submit_s = clock;
    clock += gap(rng);
    j.model = models[std::uniform_int_distribution<size_t>(0, models.size() - 1)(rng)];
    j.gpus = 1 << std::uniform_int_distribution<int>(0, max_log)(rng);
    double dur = min_s * std::exp(u(rng) * std::log(max_s / min_s));
    j.iterations = std::max(1.0, std::round(dur * tm.iters_per_s(j.model, opt.ref_type, j.gpus)));
    finish_job(j, opt, rng);
    t.jobs.push_back(j);
  }
  return t;
}

}  // namespace ringsim
