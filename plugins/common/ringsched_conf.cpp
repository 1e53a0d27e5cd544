// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched_conf.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bounded_int.h"

namespace ringsched {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A relative path in the configuration is relative to the configuration file's folder.
std::string resolve(const std::string& conf_path, const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  const size_t slash = conf_path.rfind('/');
  return slash == std::string::npos ? p : conf_path.substr(0, slash + 1) + p;
}

// Reads one line's value with bounds; throws InputError(path, line, ...) naming the key.
class LineReader {
 public:
  LineReader(const std::string& path, int line, const std::string& key, const std::string& value)
      : path_(path), line_(line), key_(key), value_(value) {}

  double number(double lo, double hi) const {
    char* end = nullptr;
    const double v = std::strtod(value_.c_str(), &end);
    if (value_.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
      fail("expected a number in " + fmt(lo) + ".." + fmt(hi));
    return v;
  }
  int integer(long lo, long hi) const {
    long v = 0;
    if (!parse_long(value_, lo, hi, &v)) fail("expected a whole number in " + fmt(lo) + ".." + fmt(hi));
    return static_cast<int>(v);
  }
  bool boolean() const {
    const std::string v = lower(value_);
    if (v == "yes" || v == "true" || v == "1") return true;
    if (v == "no" || v == "false" || v == "0") return false;
    fail("expected yes or no");
  }
  const std::string& text() const {
    if (value_.empty()) fail("empty value");
    return value_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(path_, line_, key_ + "='" + value_.substr(0, 60) + "': " + what);
  }

 private:
  static std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }
  const std::string& path_;
  int line_;
  std::string key_, value_;
};

}  // namespace

RingschedConf RingschedConf::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

RingschedConf RingschedConf::parse(const std::string& text, const std::string& path) {
  RingschedConf c;
  c.path = path;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    if (raw.size() > 4096) throw InputError(path, line, "line longer than 4096 characters");
    const size_t hash = raw.find('#');
    const std::string s = trim(hash == std::string::npos ? raw : raw.substr(0, hash));
    if (s.empty()) continue;
    const size_t eq = s.find('=');
    if (eq == std::string::npos) throw InputError(path, line, "expected Key=Value, got '" + s.substr(0, 60) + "'");
    const std::string key = trim(s.substr(0, eq));
    const std::string k = lower(key);
    const LineReader v(path, line, key, trim(s.substr(eq + 1)));
    if (k == "policy") {
      try {
        c.planner.policy = parse_policy(lower(v.text()));
      } catch (const InputError& e) {
        v.fail(e.what());
      }
    } else if (k == "replaninterval") {
      c.replan_interval_s = v.integer(1, 86400);
    } else if (k == "minreplangap") {
      c.min_replan_gap_s = v.integer(1, 3600);
    } else if (k == "reshapeinterval") {
      c.reshape_interval_s = v.integer(0, 86400);
    } else if (k == "resizehold") {
      c.resize_hold_s = v.integer(0, 86400);
    } else if (k == "restartcost") {
      c.planner.costs.restart_s = v.number(0, 86400);
    } else if (k == "mingainmultiple") {
      c.planner.costs.min_gain_multiple = v.number(0, 1000);
    } else if (k == "minresizeinterval") {
      c.planner.costs.min_interval_s = v.number(0, 7 * 86400);
    } else if (k == "samples") {
      c.planner.samples = v.integer(1, 100000);
    } else if (k == "seed") {
      c.planner.seed = static_cast<unsigned>(v.integer(0, 2147483647));
    } else if (k == "poweroftwo") {
      c.planner.power_of_two = v.boolean();
    } else if (k == "similarity") {
      c.planner.use_similarity = v.boolean();
    } else if (k == "spbpacking") {
      c.planner.spb_packing = v.boolean();
    } else if (k == "mixedtypes") {
      c.planner.allow_mixed_types = v.boolean();
    } else if (k == "profilefiles") {
      c.profile_files.clear();
      std::istringstream list(v.text());
      std::string item;
      while (std::getline(list, item, ',')) {
        item = trim(item);
        if (item.empty()) v.fail("empty entry in the list");
        c.profile_files.push_back(resolve(path, item));
      }
    } else if (k == "featurefile") {
      c.feature_file = resolve(path, v.text());
    } else if (k == "referencetype") {
      c.reference_type = normalize_type(v.text());
    } else if (k == "similarityk") {
      c.similarity_k = lower(v.text()) == "auto" ? 0 : static_cast<int>(v.integer(1, 100));
    } else if (k == "planfile") {
      c.plan_file = resolve(path, v.text());
    } else if (k == "maxgpusperjob") {
      c.max_gpus_per_job = v.integer(1, 4096);
    } else if (k == "defaultruntime") {
      c.default_runtime_s = v.number(1, 365 * 86400.0);
    } else if (k == "resizerunning") {
      c.resize_running = v.boolean();
    } else if (k == "preempt") {
      c.planner.preempt = v.boolean();
    } else if (k == "tailguard") {
      c.planner.tail_guard = v.boolean();
    } else if (k == "placementhorizon") {
      c.planner.placement_horizon = v.boolean();
    } else if (k == "fairness") {
      c.planner.fairness = v.number(0, 1000);
    } else if (k == "latefactor") {
      c.planner.late_factor = v.number(0, 1000);
    } else if (k == "lateshare") {
      c.planner.late_share = v.number(0, 1);
    } else if (k == "lendhorizon") {
      c.planner.lend_horizon_s = v.number(0, 365 * 86400.0);
    } else if (k == "lendarrivals") {
      c.planner.lend_arrivals = v.number(0, 1000);
    } else if (k == "replaceslower") {
      c.planner.replace_slower = v.number(0, 1000);
      if (c.planner.replace_slower > 0 && c.planner.replace_slower < 1)
        v.fail("expected 0 (off) or a factor of 1 or more");
    } else if (k == "fairplacement") {
      c.planner.fair_placement = v.number(0, 1000);
    } else if (k == "lendvaluation") {
      // Removed: say so rather than "unknown key" to an admin whose file had it.
      throw InputError(path, line, "LendValuation was removed: a late job now gets its whole floor "
                                   "over nodes wherever that runs it faster (ringsched-policies(7)); "
                                   "delete the line");
    } else {
      throw InputError(path, line, "unknown key '" + key.substr(0, 60) + "'");
    }
  }
  if (c.profile_files.empty()) throw InputError(path, 0, "ProfileFiles is required");
  return c;
}

}  // namespace ringsched
