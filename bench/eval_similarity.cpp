// SPDX-License-Identifier: GPL-2.0-or-later
// eval_similarity: leave-one-model-out evaluation of the model-similarity policy (DESIGN 3.4) on
// the Gavel table, against the naive rules "newest GPU is best" and "mean ratio of all models".
// Two ways of leaving models out: one job type (its other batch sizes stay known) and one whole
// architecture (all its batch sizes unseen). The headline k-NN is nested cross-validation: in
// each outer fold, fit_similarity() picks k, the feature weights and the fallback towards the
// mean by leaving groups of the TRAINING models out (the same kind of group as the outer fold),
// so the held-out models never choose anything. The fixed-k k-NN and the k sweep are printed for
// comparison only. Prints a progress line, per-model and per-fold tables, the summary tables and
// a JSON summary.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/similarity.h"

using namespace ringsched;

namespace {

struct Options {
  std::string profiles = std::string(RINGSCHED_SRCDIR) + "/data/profiles/gavel.csv";
  std::string features = std::string(RINGSCHED_SRCDIR) + "/data/model_features.csv";
  std::string gpu_types = std::string(RINGSCHED_SRCDIR) + "/data/gpu_types.csv";
  std::string reference = "k80";
  std::vector<std::string> types = {"k80", "p100", "v100"};
  int k = 3;
  unsigned seed = 1;
  int instances = 50;    // feature-perturbation draws
  double noise = 0.25;   // log-normal sigma of the perturbation
  std::string partial_type = "p100";  // measured besides the reference in the partial variant
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: eval_similarity [options]\n"
               "Leave-one-model-out evaluation of the model-similarity policy (k-NN speed ratios,\n"
               "configured in each fold by an inner leave-one-out on the training models only)\n"
               "against the rules \"newest GPU is best\" and \"mean ratio of all models\".\n"
               "  --profiles PATH   profile CSV (default: data/profiles/gavel.csv)\n"
               "  --features PATH   model feature CSV (default: data/model_features.csv)\n"
               "  --gpu-types PATH  GPU type facts (default: data/gpu_types.csv)\n"
               "  --types A,B,..    GPU types compared (default: k80,p100,v100)\n"
               "  --reference T     reference type of the ratios (default: k80)\n"
               "  --k N             neighbours of the fixed-k comparison (default: 3; the\n"
               "                    headline k-NN chooses k by nested cross-validation)\n"
               "  --partial T       also score models measured on T besides the reference\n"
               "                    (default: p100; \"none\" to skip)\n"
               "  --instances N     draws of the feature-perturbation check (default: 50; 0: none)\n"
               "  --noise S         log-normal sigma of that perturbation (default: 0.25)\n"
               "  --seed N          seed of the perturbation draws (default: 1)\n"
               "  --help            this text\n");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(normalize_type(item));
  return out;
}

std::string best_of(const std::map<std::string, double>& ratios) {
  std::string best;
  double v = -1;
  for (const auto& [t, r] : ratios)
    if (r > v) {
      v = r;
      best = t;
    }
  return best;
}

struct Score {
  int models = 0, top1 = 0, ratios = 0;
  double abs_err = 0, rel_err = 0;
  // predicted_best: the rule's pick when it is not the largest predicted ratio.
  void add(const std::map<std::string, double>& pred, const std::map<std::string, double>& truth,
           const std::string& ref, const std::string& predicted_best = "",
           const std::string& given = "") {
    ++models;
    if ((predicted_best.empty() ? best_of(pred) : predicted_best) == best_of(truth)) ++top1;
    for (const auto& [t, r] : truth) {
      if (t == ref || t == given) continue;
      double p = pred.count(t) ? pred.at(t) : 1.0;
      abs_err += std::fabs(p - r);
      rel_err += std::fabs(p - r) / r;
      ++ratios;
    }
  }
  double acc() const { return models ? 100.0 * top1 / models : 0; }
  double mae() const { return ratios ? abs_err / ratios : 0; }
  double mre() const { return ratios ? 100.0 * rel_err / ratios : 0; }
};

struct Result {
  Score knn, newest, mean;
  // Partial measurements: the left-out model's own ratio on one more type is known.
  Score knn_partial, newest_partial, mean_partial;
  // Per-model rows (model, truth, knn prediction, neighbours).
  struct Row {
    std::string model;
    std::map<std::string, double> truth, knn;
    double share = 1;  // neighbours' share against the mean (fallback)
    std::string neighbours;
  };
  std::vector<Row> rows;
  // Per outer fold: what the inner leave-one-group-out chose (nested only).
  struct Fold {
    std::string name;
    FitCandidate chosen;
    int candidates = 0;
  };
  std::vector<Fold> folds;
};

// How the k-NN is configured in each outer fold.
enum class Method {
  kFixed,   // opt's k, uniform weights, no fallback (the configuration before nested CV)
  kNested,  // fit_similarity() on the fold's training models only
};

// One leave-out evaluation: folds are groups of models left out together.
Result evaluate(const ProfileTable& full, const FeatureTable& features,
                const std::map<std::string, GpuTypeInfo>& gpus, const Options& opt, int k,
                bool by_architecture, Method method = Method::kFixed) {
  KnownRatios all = known_ratios(full, opt.reference, opt.types);
  std::vector<std::string> evaluated;
  for (const auto& [m, r] : all)
    if (r.size() == opt.types.size() && features.find(m)) evaluated.push_back(m);
  auto group = [by_architecture](const std::string& m) {
    return by_architecture ? architecture_of(m) : m;
  };
  std::map<std::string, std::vector<std::string>> folds;
  for (const std::string& m : evaluated) folds[group(m)].push_back(m);

  // "Newest GPU is best": ratios are the peak FP32 ratios, so the newest type ranks first.
  std::map<std::string, double> newest;
  std::string newest_type;
  int newest_year = 0;
  for (const std::string& t : opt.types) {
    if (!gpus.count(t) || !gpus.count(opt.reference))
      throw InputError("gpu types: " + t + " or " + opt.reference + " missing from " + opt.gpu_types);
    newest[t] = gpus.at(t).fp32_tflops / gpus.at(opt.reference).fp32_tflops;
    if (gpus.at(t).release_year > newest_year) {
      newest_year = gpus.at(t).release_year;
      newest_type = t;
    }
  }

  SimilarityConfig cfg;
  cfg.k = k;
  cfg.reference_type = opt.reference;
  cfg.types = opt.types;
  Result res;
  for (const auto& [name, left_out] : folds) {
    std::set<std::string> out;
    for (const auto& [m, r] : all)  // every model of the group, scored or not, is unseen
      if (group(m) == name) out.insert(m);
    KnownRatios train;
    for (const auto& [m, r] : all)
      if (!out.count(m)) train[m] = r;
    SimilarityConfig fold_cfg = cfg;
    if (method == Method::kNested) {
      SimilarityFit fit = fit_similarity(features, train, cfg, group);
      fold_cfg = fit.config;
      if (fit.chosen >= 0)
        res.folds.push_back({name, fit.candidates[fit.chosen], static_cast<int>(fit.candidates.size())});
    }
    SimilarityModel sim(features, train, fold_cfg);
    // "Mean ratio of all models": arithmetic mean of the training models' ratios.
    std::map<std::string, double> mean;
    std::map<std::string, int> count;
    for (const auto& [m, r] : train)
      for (const auto& [t, v] : r) {
        mean[t] += v;
        count[t]++;
      }
    for (auto& [t, v] : mean) v /= count[t];
    for (const std::string& m : left_out) {
      const std::map<std::string, double>& truth = all.at(m);
      SpeedPrediction p = sim.predict(m);
      res.knn.add(p.ratios, truth, opt.reference);
      res.newest.add(newest, truth, opt.reference, newest_type);
      res.mean.add(mean, truth, opt.reference);
      if (!opt.partial_type.empty()) {
        // Scale each rule's ratios so that the measured type matches its measurement.
        const std::string& u = opt.partial_type;
        auto pin = [&](std::map<std::string, double> r) {
          double f = truth.at(u) / r.at(u);
          for (auto& [t, v] : r)
            if (t != opt.reference) v *= f;
          r[u] = truth.at(u);
          return r;
        };
        res.knn_partial.add(pin(p.ratios), truth, opt.reference, "", u);
        auto np = pin(newest);
        res.newest_partial.add(np, truth, opt.reference, newest_type, u);
        res.mean_partial.add(pin(mean), truth, opt.reference, "", u);
      }
      Result::Row row{m, truth, p.ratios, p.neighbour_share, ""};
      for (const Neighbour& n : p.neighbours) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s(%.2f)", row.neighbours.empty() ? "" : " ",
                      n.model.c_str(), n.weight);
        row.neighbours += buf;
      }
      res.rows.push_back(row);
    }
  }
  return res;
}

// The features that are estimates vary together per architecture.
FeatureTable perturbed(const FeatureTable& base, std::mt19937& rng, double sigma) {
  std::normal_distribution<double> normal(0.0, sigma);
  std::map<std::string, std::array<double, 3>> factor;
  FeatureTable out;
  for (ModelFeatures f : base.rows()) {
    std::string a = architecture_of(f.model);
    if (!factor.count(a))
      factor[a] = {std::exp(normal(rng)), std::exp(normal(rng)), std::exp(normal(rng))};
    f.params_m *= factor[a][0];
    f.gflops_per_sample *= factor[a][1];
    f.act_mb_per_sample *= factor[a][2];
    out.add(f);
  }
  return out;
}

void print_score_row(const char* variant, const char* method, const Score& s) {
  std::printf("%-14s %-34s %7d %8.1f%% %9.3f %9.1f%%\n", variant, method, s.models, s.acc(), s.mae(),
              s.mre());
}

std::string json_score(const Score& s) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "{\"models\": %d, \"top1_pct\": %.2f, \"mae_ratio\": %.4f, \"mre_pct\": %.2f}",
                s.models, s.acc(), s.mae(), s.mre());
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "eval_similarity: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto integer = [&](long lo, long hi) {
      std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < lo || n > hi) {
        std::fprintf(stderr, "eval_similarity: %s: %s is not an integer in %ld..%ld\n", a.c_str(),
                     v.c_str(), lo, hi);
        std::exit(2);
      }
      return n;
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--profiles") {
      opt.profiles = value();
    } else if (a == "--features") {
      opt.features = value();
    } else if (a == "--gpu-types") {
      opt.gpu_types = value();
    } else if (a == "--types") {
      opt.types = split(value());
    } else if (a == "--reference") {
      opt.reference = normalize_type(value());
    } else if (a == "--partial") {
      opt.partial_type = normalize_type(value());
      if (opt.partial_type == "none") opt.partial_type.clear();
    } else if (a == "--k") {
      opt.k = static_cast<int>(integer(1, 100));
    } else if (a == "--instances") {
      opt.instances = static_cast<int>(integer(0, 100000));
    } else if (a == "--seed") {
      opt.seed = static_cast<unsigned>(integer(0, 4294967295L));
    } else if (a == "--noise") {
      std::string v = value();
      char* end = nullptr;
      opt.noise = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(opt.noise >= 0) || opt.noise > 5) {
        std::fprintf(stderr, "eval_similarity: --noise: %s is not a number in 0..5\n", v.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "eval_similarity: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (!opt.partial_type.empty() &&
      (opt.partial_type == opt.reference ||
       std::find(opt.types.begin(), opt.types.end(), opt.partial_type) == opt.types.end())) {
    std::fprintf(stderr, "eval_similarity: --partial %s must be one of --types other than %s\n",
                 opt.partial_type.c_str(), opt.reference.c_str());
    return 2;
  }
  try {
    ProfileTable full = ProfileTable::load_csv(opt.profiles);
    FeatureTable features = FeatureTable::load_csv(opt.features);
    auto gpus = load_gpu_types(opt.gpu_types);
    std::printf("eval_similarity: %zu models in %s, types %zu, reference %s, fixed k=%d\n",
                full.models().size(), opt.profiles.c_str(), opt.types.size(), opt.reference.c_str(),
                opt.k);
    std::fflush(stdout);

    FitGrid grid;
    std::string grid_text = "k {";
    for (size_t i = 0; i < grid.k.size(); ++i) grid_text += (i ? "," : "") + std::to_string(grid.k[i]);
    grid_text += "} x weights {uniform, learned} x fallback scale {";
    for (size_t i = 0; i < grid.fallback_scale.size(); ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%g", i ? "," : "", grid.fallback_scale[i]);
      grid_text += buf;
    }
    grid_text += "}";
    std::printf("nested CV grid: %s\n", grid_text.c_str());
    std::fflush(stdout);

    Result arch = evaluate(full, features, gpus, opt, opt.k, true, Method::kNested);
    Result job = evaluate(full, features, gpus, opt, opt.k, false, Method::kNested);
    Result arch_fixed = evaluate(full, features, gpus, opt, opt.k, true);
    Result job_fixed = evaluate(full, features, gpus, opt, opt.k, false);
    std::printf("evaluations done\n");

    std::printf("\nPer model (leave one architecture out, nested CV; ratios = v(type,1)/v(%s,1); "
                "share: weight of the neighbours against the mean ratio):\n",
                opt.reference.c_str());
    std::printf("%-22s", "model");
    for (const std::string& t : opt.types) std::printf(" %7s %7s", (t + "_m").c_str(), (t + "_p").c_str());
    std::printf("  best_m best_p share  neighbours(weight)\n");
    for (const auto& row : arch.rows) {
      std::printf("%-22s", row.model.c_str());
      for (const std::string& t : opt.types)
        std::printf(" %7.2f %7.2f", row.truth.at(t), row.knn.count(t) ? row.knn.at(t) : 0.0);
      std::printf("  %-6s %-6s %5.2f  %s\n", best_of(row.truth).c_str(), best_of(row.knn).c_str(),
                  row.share, row.neighbours.c_str());
    }

    std::printf("\nPer fold (leave one architecture out): the configuration the inner "
                "leave-one-architecture-out on the training architectures chose\n");
    std::printf("%-16s %3s %-8s %8s %12s %14s\n", "held out", "k", "weights", "fallback",
                "inner top-1", "inner |log e|");
    for (const auto& f : arch.folds)
      std::printf("%-16s %3d %-8s %8g %6d/%-5d %14.3f\n", f.name.c_str(), f.chosen.k,
                  f.chosen.learned_weights ? "learned" : "uniform", f.chosen.fallback_scale,
                  f.chosen.top1, f.chosen.evaluated, f.chosen.mean_abs_log_error);
    std::map<std::string, int> job_choices;
    for (const auto& f : job.folds) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "k=%d %s fallback %g", f.chosen.k,
                    f.chosen.learned_weights ? "learned" : "uniform", f.chosen.fallback_scale);
      job_choices[buf]++;
    }
    std::printf("\nLeave one job type out: configurations chosen by the inner leave-one-job-type-out "
                "(folds):");
    for (const auto& [c, n] : job_choices) std::printf("  %s (%d)", c.c_str(), n);
    std::printf("\n");

    // What the policy would use with every model of the table known (not an evaluation).
    KnownRatios whole = known_ratios(full, opt.reference, opt.types);
    SimilarityConfig base;
    base.reference_type = opt.reference;
    base.types = opt.types;
    SimilarityFit whole_fit = fit_similarity(features, whole, base, architecture_of);
    std::vector<double> weights = learn_feature_weights(features, whole, opt.reference);
    std::printf("\nWhole table, leave one architecture out chooses: k=%d, %s weights, fallback %g\n"
                "learned feature weights on the whole table:",
                whole_fit.config.k, whole_fit.config.feature_weights.empty() ? "uniform" : "learned",
                whole_fit.config.fallback_scale);
    for (size_t i = 0; i < weights.size(); ++i)
      std::printf("%s %s %.2f", i % 4 ? "," : "\n ", feature_names()[i].c_str(), weights[i]);
    std::printf("\n");

    std::printf("\n%-14s %-34s %7s %9s %9s %10s\n", "leave out", "method", "models", "top-1",
                "MAE", "MRE");
    char fixed_name[64];
    std::snprintf(fixed_name, sizeof fixed_name, "k-NN fixed k=%d (comparison)", opt.k);
    const char* nested_name = "k-NN, nested CV";
    print_score_row("architecture", nested_name, arch.knn);
    print_score_row("architecture", fixed_name, arch_fixed.knn);
    print_score_row("architecture", "newest GPU is best (+peak FP32)", arch.newest);
    print_score_row("architecture", "mean ratio of all models", arch.mean);
    print_score_row("job type", nested_name, job.knn);
    print_score_row("job type", fixed_name, job_fixed.knn);
    print_score_row("job type", "newest GPU is best (+peak FP32)", job.newest);
    print_score_row("job type", "mean ratio of all models", job.mean);
    std::string partial_json;
    if (!opt.partial_type.empty()) {
      std::string label = "arch+" + opt.partial_type;
      print_score_row(label.c_str(), nested_name, arch.knn_partial);
      print_score_row(label.c_str(), "newest GPU is best (+peak FP32)", arch.newest_partial);
      print_score_row(label.c_str(), "mean ratio of all models", arch.mean_partial);
      partial_json = ", \"leave_out_architecture_partial\": {\"measured\": \"" + opt.partial_type +
                     "\", \"knn_nested\": " + json_score(arch.knn_partial) +
                     ", \"newest\": " + json_score(arch.newest_partial) +
                     ", \"mean\": " + json_score(arch.mean_partial) + "}";
    }

    std::printf("\nk sweep (fixed k, uniform weights, no fallback; for comparison only, nothing is "
                "chosen from it):\n%-6s %14s %14s %14s %14s\n", "k", "arch top-1", "arch MRE",
                "job top-1", "job MRE");
    std::string sweep_json;
    for (int k : {1, 2, 3, 4, 5, 8}) {
      Result a = evaluate(full, features, gpus, opt, k, true);
      Result j = evaluate(full, features, gpus, opt, k, false);
      std::printf("%-6d %13.1f%% %13.1f%% %13.1f%% %13.1f%%\n", k, a.knn.acc(), a.knn.mre(),
                  j.knn.acc(), j.knn.mre());
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s{\"k\": %d, \"arch_top1_pct\": %.2f, \"job_top1_pct\": %.2f}",
                    sweep_json.empty() ? "" : ", ", k, a.knn.acc(), j.knn.acc());
      sweep_json += buf;
    }

    double pmin = 101, pmax = -1, psum = 0;
    if (opt.instances > 0) {
      std::printf("\nperturbation check (nested CV, leave one architecture out): %d draws, "
                  "features x exp(N(0, %.2f)) per architecture\n",
                  opt.instances, opt.noise);
      std::mt19937 rng(opt.seed);
      for (int i = 0; i < opt.instances; ++i) {
        FeatureTable f = perturbed(features, rng, opt.noise);
        double acc = evaluate(full, f, gpus, opt, opt.k, true, Method::kNested).knn.acc();
        pmin = std::min(pmin, acc);
        pmax = std::max(pmax, acc);
        psum += acc;
        if ((i + 1) % 10 == 0 || i + 1 == opt.instances) {
          std::printf("  %d/%d draws done\n", i + 1, opt.instances);
          std::fflush(stdout);
        }
      }
      std::printf("arch top-1 under perturbation: mean %.1f%%, min %.1f%%, max %.1f%%\n",
                  psum / opt.instances, pmin, pmax);
    }

    std::printf("\n{\"profiles\": \"%s\", \"reference\": \"%s\", \"fixed_k\": %d, \"seed\": %u, "
                "\"nested_grid\": \"%s\", "
                "\"leave_out_architecture\": {\"knn_nested\": %s, \"knn_fixed\": %s, "
                "\"newest\": %s, \"mean\": %s}, "
                "\"leave_out_job_type\": {\"knn_nested\": %s, \"knn_fixed\": %s, \"newest\": %s, "
                "\"mean\": %s}, \"k_sweep\": [%s]",
                opt.profiles.c_str(), opt.reference.c_str(), opt.k, opt.seed, grid_text.c_str(),
                json_score(arch.knn).c_str(), json_score(arch_fixed.knn).c_str(),
                json_score(arch.newest).c_str(), json_score(arch.mean).c_str(),
                json_score(job.knn).c_str(), json_score(job_fixed.knn).c_str(),
                json_score(job.newest).c_str(), json_score(job.mean).c_str(), sweep_json.c_str());
    std::printf("%s", partial_json.c_str());
    if (opt.instances > 0)
      std::printf(", \"perturbation\": {\"method\": \"nested\", \"instances\": %d, \"noise\": %.3f, "
                  "\"arch_top1_mean_pct\": %.2f, \"min_pct\": %.2f, \"max_pct\": %.2f}",
                  opt.instances, opt.noise, psum / opt.instances, pmin, pmax);
    std::printf("}\n");
  } catch (const InputError& e) {
    std::fprintf(stderr, "eval_similarity: %s\n", e.what());
    return 1;
  }
  return 0;
}
