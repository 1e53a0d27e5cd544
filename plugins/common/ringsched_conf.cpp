#include "ringsched_conf.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

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
    const double v = number(static_cast<double>(lo), static_cast<double>(hi));
    if (v != std::floor(v)) fail("expected a whole number in " + fmt(lo) + ".." + fmt(hi));
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
    } else {
      throw InputError(path, line, "unknown key '" + key.substr(0, 60) + "'");
    }
  }
  if (c.profile_files.empty()) throw InputError(path, 0, "ProfileFiles is required");
  return c;
}

Engine::Engine(RingschedConf conf) : conf_(std::move(conf)) {
  ProfileTable table;
  for (const std::string& f : conf_.profile_files) table.merge(ProfileTable::load_csv(f));
  if (table.points().empty())
    throw InputError(conf_.path, 0, "ProfileFiles hold no profile point");
  if (conf_.planner.use_similarity && !conf_.feature_file.empty()) {
    FeatureTable features = FeatureTable::load_csv(conf_.feature_file);
    SimilarityConfig sc;
    sc.k = conf_.similarity_k > 0 ? conf_.similarity_k : 3;
    sc.reference_type = conf_.reference_type;
    // auto: k, feature weights and the fallback chosen by leaving whole architectures of the
    // profiled models out (the way eval_similarity scores it), once per configuration load.
    if (conf_.similarity_k == 0)
      sc = fit_similarity(features, known_ratios(table, sc.reference_type), sc, architecture_of).config;
    similarity_ = std::make_unique<SimilarityModel>(std::move(features), table, sc);
  }
  model_ = ThroughputModel(std::move(table));
}

bool Engine::prepare_model(const std::string& model, const std::vector<std::string>& types,
                           std::string& why) {
  std::vector<std::string> missing;
  for (const std::string& t : types)
    if (!model_.knows(model, t)) missing.push_back(t);
  if (missing.empty()) return true;
  if (similarity_ && similarity_->features().find(model))
    similarity_->register_predictions(model_, model, missing);
  for (const std::string& t : types)
    if (model_.knows(model, t)) return true;
  why = "model '" + model + "' has no profile on " +
        (types.size() == 1 ? "GPU type " + types[0] : std::string("any allowed GPU type")) +
        (similarity_ ? " and no row in " + conf_.feature_file + " to predict it from"
                     : " (set FeatureFile in ringsched.conf to predict unknown models)");
  return false;
}

std::vector<std::string> Engine::rank_types(const std::string& model,
                                            const std::vector<std::string>& types) const {
  std::vector<std::pair<double, std::string>> speed;
  for (const std::string& t : types) {
    const double v = model_.iters_per_s(model, t, 1);
    if (v > 0) speed.emplace_back(-v, t);
  }
  std::sort(speed.begin(), speed.end());
  std::vector<std::string> ranked;
  for (const auto& s : speed) ranked.push_back(s.second);
  return ranked;
}

bool Engine::admit(RingRequest& request, const Cluster& cluster, std::string& error) {
  const std::vector<std::string> cluster_types = cluster.types();
  std::string known;
  for (const auto& t : cluster_types) known += (known.empty() ? "" : ", ") + t;
  for (const std::string& t : request.types) {
    if (std::find(cluster_types.begin(), cluster_types.end(), t) == cluster_types.end()) {
      error = "ringsched: unknown GPU type '" + t + "' in --ring-types (this cluster has: " +
              known + ")";
      return false;
    }
  }
  if (request.types.empty()) request.types = cluster_types;
  if (request.min_gpus == 0) {
    request.min_gpus = 1;
    request.max_gpus = request.elastic == 1 ? conf_.max_gpus_per_job : 1;
  }
  if (request.max_gpus > conf_.max_gpus_per_job) {
    error = "ringsched: --ring-gpus=" + std::to_string(request.min_gpus) + "-" +
            std::to_string(request.max_gpus) + " exceeds MaxGpusPerJob=" +
            std::to_string(conf_.max_gpus_per_job);
    return false;
  }
  int largest = 0;
  std::string largest_type;
  for (const std::string& t : request.types) {
    if (cluster.gpus_of_type(t) > largest) {
      largest = cluster.gpus_of_type(t);
      largest_type = t;
    }
  }
  if (request.min_gpus > largest) {
    error = "ringsched: impossible --ring-gpus=" + std::to_string(request.min_gpus) + "-" +
            std::to_string(request.max_gpus) + ": the job needs at least " +
            std::to_string(request.min_gpus) + " GPUs of one type, the largest allowed pool has " +
            std::to_string(largest) + (largest_type.empty() ? "" : " (" + largest_type + ")");
    return false;
  }
  if (conf_.planner.power_of_two) {
    const int p = floor_power_of_two(std::min(request.max_gpus, largest));
    if (p < request.min_gpus) {
      error = "ringsched: --ring-gpus=" + std::to_string(request.min_gpus) + "-" +
              std::to_string(request.max_gpus) +
              " holds no power of two that fits the cluster (ring jobs use 1, 2, 4, 8, ... GPUs)";
      return false;
    }
  }
  std::string why;
  if (!prepare_model(request.model, request.types, why)) {
    error = "ringsched: --ring-model: " + why;
    return false;
  }
  return true;
}

Job Engine::make_job(const std::string& id, const RingRequest& request, double submit_s,
                     double runtime_s) const {
  Job job;
  job.id = id;
  job.model = request.model;
  job.global_batch = static_cast<double>(request.batch);
  job.min_gpus = std::max(1, request.min_gpus);
  job.max_gpus = std::max(job.min_gpus, request.max_gpus);
  job.allowed_types = request.types;
  job.elastic = request.is_elastic();
  job.requested_gpus = job.min_gpus;
  job.spb = request.spb;
  job.submit_s = submit_s;
  double iterations = request.iterations;
  if (iterations <= 0) {
    double best = 0;
    for (const std::string& t : rank_types(request.model, request.types))
      best = std::max(best, model_.iters_per_s(request.model, t, job.min_gpus));
    // A partition without MaxTime gives every job a 365-day limit: a limit of a week or more
    // says nothing about the training's length, DefaultRuntime does better.
    const bool limit_known = runtime_s > 0 && runtime_s < 7 * 86400.0;
    iterations = std::max(1.0, best * (limit_known ? runtime_s : conf_.default_runtime_s));
  }
  job.iterations = iterations;
  job.remaining = iterations;
  return job;
}

std::pair<std::string, int> Engine::single_type(const JobPlan& plan,
                                                const std::vector<std::string>& allowed,
                                                const std::string& model,
                                                const Cluster& cluster) const {
  if (plan.gpus_by_type.size() == 1) return *plan.gpus_by_type.begin();
  if (plan.gpus <= 0) return {"", 0};
  for (const std::string& t : rank_types(model, allowed))
    if (cluster.usable_of_type(t) >= plan.gpus) return {t, plan.gpus};
  for (const std::string& t : rank_types(model, allowed))
    if (cluster.gpus_of_type(t) >= plan.gpus) return {t, plan.gpus};
  return {"", 0};
}

}  // namespace ringsched
