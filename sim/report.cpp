// SPDX-License-Identifier: GPL-2.0-or-later
#include "report.h"

#include <jansson.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "ringsched/model.h"

namespace ringsim {

using ringsched::InputError;

namespace {

struct JsonDeleter {
  void operator()(json_t* j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;

json_t* metrics(const SimResult& r, bool job_rows) {
  json_t* o = json_object();
  json_object_set_new(o, "avg_jct_s", json_real(r.avg_jct_s));
  json_object_set_new(o, "p50_jct_s", json_real(r.p50_jct_s));
  json_object_set_new(o, "p99_jct_s", json_real(r.p99_jct_s));
  json_object_set_new(o, "makespan_s", json_real(r.makespan_s));
  json_object_set_new(o, "gpu_util", json_real(r.gpu_util));
  json_object_set_new(o, "useful_gpu_util", json_real(r.useful_util));
  json_object_set_new(o, "restarts", json_integer(r.restarts));
  json_object_set_new(o, "stops", json_integer(r.stops));
  json_object_set_new(o, "ftf_max", json_real(r.ftf_max));
  json_object_set_new(o, "decision_ms_p50", json_real(r.decision_ms_p50));
  json_object_set_new(o, "decision_ms_p99", json_real(r.decision_ms_p99));
  json_object_set_new(o, "decisions", json_integer(r.decisions));
  json_object_set_new(o, "iters_per_gpu_hour", json_real(r.iters_per_gpu_hour));
  json_object_set_new(o, "wall_s", json_real(r.wall_s));
  if (job_rows) {
    json_t* rows = json_array();
    for (const JobRow& j : r.jobs) {
      json_t* x = json_object();
      json_object_set_new(x, "id", json_string(j.id.c_str()));
      json_object_set_new(x, "model", json_string(j.model.c_str()));
      json_object_set_new(x, "submit_s", json_real(j.submit_s));
      json_object_set_new(x, "start_s", json_real(j.start_s));
      json_object_set_new(x, "finish_s", json_real(j.finish_s));
      json_object_set_new(x, "jct_s", json_real(j.jct_s));
      json_object_set_new(x, "isolated_s", json_real(j.ideal_s));
      json_object_set_new(x, "requested_gpus", json_integer(j.requested));
      json_object_set_new(x, "max_gpus", json_integer(j.max_gpus));
      json_object_set_new(x, "restarts", json_integer(j.restarts));
      json_object_set_new(x, "gpu_s", json_real(j.gpu_s));
      json_object_set_new(x, "types", json_string(j.types.c_str()));
      json_array_append_new(rows, x);
    }
    json_object_set_new(o, "jobs", rows);
  }
  return o;
}

std::string fmt_hours(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", s / 3600.0);
  return b;
}

}  // namespace

void write_json_report(const std::string& path, const RunInfo& info, const std::vector<SimResult>& results,
                       bool job_rows) {
  JsonPtr root(json_object());
  json_t* run = json_object();
  json_object_set_new(run, "trace", json_string(info.trace.c_str()));
  json_object_set_new(run, "cluster", json_string(info.cluster.c_str()));
  json_object_set_new(run, "profiles", json_string(info.profiles.c_str()));
  json_object_set_new(run, "gpus", json_integer(info.gpus));
  json_object_set_new(run, "jobs", json_integer(info.jobs));
  json_object_set_new(run, "round_s", json_real(info.round_s));
  json_object_set_new(run, "restart_s", json_real(info.options.costs.restart_s));
  json_object_set_new(run, "plan_gap_s", json_real(info.plan_gap_s));
  json_object_set_new(run, "fairness", json_real(info.options.fairness));
  json_object_set_new(run, "late_factor", json_real(info.options.late_factor));
  json_object_set_new(run, "lend_horizon_s", json_real(info.options.lend_horizon_s));
  json_object_set_new(run, "lend_arrivals", json_real(info.options.lend_arrivals));
  json_object_set_new(run, "replace_slower", json_real(info.options.replace_slower));
  json_object_set_new(run, "fair_placement", json_real(info.options.fair_placement));
  json_object_set_new(run, "seed", json_integer(info.options.seed));
  json_object_set_new(root.get(), "ringsim", run);
  json_t* pol = json_object();
  for (const SimResult& r : results) json_object_set_new(pol, r.policy.c_str(), metrics(r, job_rows));
  json_object_set_new(root.get(), "policies", pol);
  if (json_dump_file(root.get(), path.c_str(), JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) != 0)
    throw InputError(path, 0, "cannot write the JSON report");
}

std::string format_table(const std::vector<SimResult>& results) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "%-15s %10s %10s %10s %11s %6s %8s %6s %9s %9s\n", "policy", "avg_jct_h", "p50_h",
                "p99_h", "makespan_h", "util", "restarts", "ftf", "dec_p99ms", "wall_s");
  o << line;
  for (const SimResult& r : results) {
    std::snprintf(line, sizeof line, "%-15s %10s %10s %10s %11s %6.3f %8ld %6.1f %9.2f %9.2f\n", r.policy.c_str(),
                  fmt_hours(r.avg_jct_s).c_str(), fmt_hours(r.p50_jct_s).c_str(), fmt_hours(r.p99_jct_s).c_str(),
                  fmt_hours(r.makespan_s).c_str(), r.gpu_util, r.restarts, r.ftf_max, r.decision_ms_p99, r.wall_s);
    o << line;
  }
  if (results.size() > 1) {
    const SimResult& base = results.front();
    o << "ratios to " << base.policy << " (avg JCT, makespan; < 1 is better):";
    for (size_t i = 1; i < results.size(); ++i) {
      std::snprintf(line, sizeof line, " %s %.3f/%.3f", results[i].policy.c_str(),
                    results[i].avg_jct_s / base.avg_jct_s, results[i].makespan_s / base.makespan_s);
      o << line;
    }
    o << "\n";
  }
  return o.str();
}

namespace {

std::string safe_name(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return o;
}

}  // namespace

bool write_plots(const std::string& dir, const std::vector<SimResult>& results, std::string* error) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  // JCT CDF per policy.
  for (const SimResult& r : results) {
    std::vector<double> j;
    for (const JobRow& row : r.jobs) j.push_back(row.jct_s / 3600.0);
    std::sort(j.begin(), j.end());
    std::ofstream f(dir + "/jct_" + safe_name(r.policy) + ".dat");
    size_t step = std::max<size_t>(1, j.size() / 2000);
    for (size_t i = 0; i < j.size(); i += step) f << j[i] << ' ' << double(i + 1) / j.size() << '\n';
    if (!j.empty()) f << j.back() << " 1\n";
    // Utilisation over time, time-averaged into at most ~1000 buckets.
    std::ofstream u(dir + "/util_" + safe_name(r.policy) + ".dat");
    if (!r.busy_gpus.empty()) {
      double t0 = r.busy_gpus.front().first, t1 = r.busy_gpus.back().first;
      double width = std::max(1.0, (t1 - t0) / 1000.0);
      int gpus = 1;
      for (const auto& b : r.busy_gpus) gpus = std::max(gpus, b.second);
      double bucket_start = t0, acc = 0;
      for (size_t i = 0; i + 1 < r.busy_gpus.size(); ++i) {
        double a = r.busy_gpus[i].first, b = r.busy_gpus[i + 1].first;
        while (b > bucket_start + width) {
          double cut = bucket_start + width;
          if (a < cut) acc += r.busy_gpus[i].second * (cut - a), a = cut;
          u << (bucket_start - t0) / 3600.0 << ' ' << acc / width << '\n';
          bucket_start = cut;
          acc = 0;
        }
        acc += r.busy_gpus[i].second * (b - a);
      }
    }
    std::ofstream g(dir + "/jobgpus_" + safe_name(r.policy) + ".dat");
    for (const auto& kv : r.job_gpus) {
      g << "# job " << kv.first << '\n';
      int prev = 0;
      for (const auto& p : kv.second) {
        g << p.first / 3600.0 << ' ' << prev << '\n' << p.first / 3600.0 << ' ' << p.second << '\n';
        prev = p.second;
      }
      g << "\n\n";
    }
  }
  std::ofstream gp(dir + "/plots.gp");
  for (const char* term : {"pngcairo size 900,600", "svg size 900,600"}) {
    std::string ext = std::string(term).rfind("png", 0) == 0 ? "png" : "svg";
    gp << "set terminal " << term << "\nset key bottom right\nset grid\n";
    gp << "set output '" << dir << "/jct_cdf." << ext << "'\nset title 'JCT CDF'\nset xlabel 'JCT (hours)'\n"
       << "set ylabel 'fraction of jobs'\nset logscale x\nplot ";
    for (size_t i = 0; i < results.size(); ++i)
      gp << (i ? ", " : "") << "'" << dir << "/jct_" << safe_name(results[i].policy) << ".dat' with lines lw 2 title '"
         << results[i].policy << "'";
    gp << "\nunset logscale x\nset key top right\n";
    gp << "set output '" << dir << "/gpu_util." << ext << "'\nset title 'GPUs allocated over time'\n"
       << "set xlabel 'time (hours)'\nset ylabel 'GPUs allocated (bucket average)'\nplot ";
    for (size_t i = 0; i < results.size(); ++i)
      gp << (i ? ", " : "") << "'" << dir << "/util_" << safe_name(results[i].policy) << ".dat' with lines title '"
         << results[i].policy << "'";
    gp << "\n";
    for (const SimResult& r : results) {
      gp << "set output '" << dir << "/job_gpus_" << safe_name(r.policy) << "." << ext << "'\n"
         << "set title 'GPUs per job over time (" << r.policy << ", sampled jobs)'\nset ylabel 'GPUs'\n"
         << "plot for [i=0:" << std::max<size_t>(1, r.job_gpus.size()) - 1 << "] '" << dir << "/jobgpus_"
         << safe_name(r.policy) << ".dat' index i with lines notitle\n";
    }
  }
  gp.close();
  std::string cmd = "gnuplot '" + dir + "/plots.gp' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *error = "cannot run gnuplot";
    return false;
  }
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int rc = pclose(p);
  if (rc != 0) {
    *error = "gnuplot failed (is gnuplot-nox installed?): " + out;
    return false;
  }
  return true;
}

}  // namespace ringsim
