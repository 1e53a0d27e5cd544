// SPDX-License-Identifier: GPL-2.0-or-later
#include "ring_request.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "bounded_int.h"

namespace ringsched {

namespace {

// Names users give to models and GPU types: letters, digits and ._- only, so that they are safe
// in logs, in the environment and in the Slurm gres syntax.
bool is_name(const std::string& s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return false;
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const std::vector<RingOptionInfo>& ring_options() {
  static const std::vector<RingOptionInfo> options = {
      {"ring-model", "RING_MODEL", "NAME",
       "ringsched: model this ring job trains, a name of the cluster's profiles (e.g. resnet50-b64); picks the GPU type"},
      {"ring-gpus", "RING_GPUS", "MIN-MAX",
       "ringsched: GPU count range (or one count N); the scheduler sizes the job within it"},
      {"ring-elastic", "RING_ELASTIC", nullptr,
       "ringsched: the job may be resized while it runs (default when MIN < MAX)"},
      {"ring-fixed", "RING_ELASTIC", nullptr,
       "ringsched: the job keeps the size it starts with"},
      {"ring-spb", "RING_SPB", nullptr,
       "ringsched: structured partial backprop allowed (smaller footprint under contention)"},
      {"ring-batch", "RING_BATCH", "N", "ringsched: global batch size of the training"},
      {"ring-iters", "RING_ITERS", "N", "ringsched: iterations the training runs"},
      {"ring-types", "RING_TYPES", "LIST",
       "ringsched: GPU types the job accepts, comma separated (default: any)"},
  };
  return options;
}

bool RingRequest::set(const std::string& option, const std::string& value, std::string& error) {
  present = true;
  if (option == "ring-model") {
    if (!is_name(value, 64)) {
      error = "--ring-model='" + value.substr(0, 80) +
              "': a model name is 1-64 letters, digits, '.', '_' or '-'";
      return false;
    }
    model = value;
    return true;
  }
  if (option == "ring-gpus") {
    const size_t dash = value.find('-');
    long lo = 0, hi = 0;
    bool ok = dash == std::string::npos
                  ? parse_long(value, 1, kMaxGpus, &lo) && (hi = lo, true)
                  : parse_long(value.substr(0, dash), 1, kMaxGpus, &lo) &&
                        parse_long(value.substr(dash + 1), 1, kMaxGpus, &hi);
    if (!ok || lo > hi) {
      error = "--ring-gpus='" + value.substr(0, 80) + "': expected MIN-MAX or N with 1 <= MIN <= MAX <= " +
              std::to_string(kMaxGpus);
      return false;
    }
    min_gpus = static_cast<int>(lo);
    max_gpus = static_cast<int>(hi);
    return true;
  }
  if (option == "ring-elastic" || option == "ring-fixed") {
    const int want = option == "ring-elastic" ? 1 : 0;
    if (elastic != -1 && elastic != want) {
      error = "--ring-elastic and --ring-fixed exclude each other";
      return false;
    }
    elastic = want;
    return true;
  }
  if (option == "ring-spb") {
    spb = true;
    return true;
  }
  if (option == "ring-batch") {
    long b = 0;
    if (!parse_long(value, 1, 10000000, &b)) {
      error = "--ring-batch='" + value.substr(0, 80) + "': expected a whole number 1..10000000";
      return false;
    }
    batch = b;
    return true;
  }
  if (option == "ring-iters") {
    long it = 0;
    if (!parse_long(value, 1, 1000000000000L, &it)) {
      error = "--ring-iters='" + value.substr(0, 80) + "': expected a whole number 1..10^12";
      return false;
    }
    iterations = static_cast<double>(it);
    return true;
  }
  if (option == "ring-types") {
    std::vector<std::string> list;
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      const std::string t = lower(value.substr(start, comma - start));
      if (!is_name(t, 32) || t.find('.') != std::string::npos) {
        error = "--ring-types='" + value.substr(0, 80) +
                "': expected a comma-separated list of GPU type names (letters, digits, '_', '-')";
        return false;
      }
      bool dup = false;
      for (const auto& x : list) dup = dup || x == t;
      if (!dup) list.push_back(t);
      start = comma + 1;
    }
    if (list.size() > static_cast<size_t>(kMaxTypes)) {
      error = "--ring-types: at most " + std::to_string(kMaxTypes) + " types";
      return false;
    }
    types = list;
    return true;
  }
  error = "unknown ringsched option --" + option.substr(0, 40);
  return false;
}

bool RingRequest::validate(std::string& error) const {
  if (!present) return true;
  if (model.empty()) {
    error = "ringsched: --ring-model is required with the other --ring-* options";
    return false;
  }
  if (elastic == 1 && min_gpus > 0 && min_gpus == max_gpus) {
    error = "ringsched: --ring-elastic needs a GPU range MIN-MAX with MIN < MAX (got --ring-gpus=" +
            std::to_string(min_gpus) + ")";
    return false;
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> RingRequest::to_env() const {
  std::vector<std::pair<std::string, std::string>> env;
  if (!present) return env;
  env.emplace_back("RING_MODEL", model);
  if (min_gpus > 0)
    env.emplace_back("RING_GPUS", std::to_string(min_gpus) + "-" + std::to_string(max_gpus));
  if (elastic != -1) env.emplace_back("RING_ELASTIC", elastic ? "1" : "0");
  if (spb) env.emplace_back("RING_SPB", "1");
  if (batch > 0) env.emplace_back("RING_BATCH", std::to_string(batch));
  if (iterations > 0)
    env.emplace_back("RING_ITERS", std::to_string(static_cast<long long>(iterations)));
  if (!types.empty()) {
    std::string list;
    for (const auto& t : types) list += (list.empty() ? "" : ",") + t;
    env.emplace_back("RING_TYPES", list);
  }
  return env;
}

bool RingRequest::from_env(const std::vector<std::string>& entries, std::string& error) {
  for (const std::string& entry : entries) {
    std::string e = entry.compare(0, 6, "SPANK_") == 0 ? entry.substr(6) : entry;
    if (e.compare(0, 5, "RING_") != 0) continue;
    const size_t eq = e.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = e.substr(0, eq), value = e.substr(eq + 1);
    std::string option;
    if (name == "RING_ELASTIC") {
      if (value != "0" && value != "1") {
        error = "RING_ELASTIC='" + value.substr(0, 20) + "': expected 0 or 1";
        return false;
      }
      option = value == "1" ? "ring-elastic" : "ring-fixed";
    } else if (name == "RING_SPB") {
      if (value != "1") continue;
      option = "ring-spb";
    } else {
      for (const auto& info : ring_options())
        if (name == info.env) option = info.option;
      if (option.empty()) continue;  // some other RING_ variable: not ours
    }
    if (!set(option, value, error)) return false;
  }
  return validate(error);
}

}  // namespace ringsched
