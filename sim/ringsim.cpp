// SPDX-License-Identifier: GPL-2.0-or-later
// ringsim: replays a job trace on a cluster under the project's policies and baselines, with
// throughputs from real measurements. See ringsim(1) and docs/ringsim.md.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine.h"
#include "policies.h"
#include "report.h"
#include "ringsched/importers.h"
#include "trace.h"

using ringsched::InputError;
using namespace ringsim;

namespace {

const char kUsage[] =
    "usage: ringsim run --trace FILE --cluster SPEC --profiles FILE[,FILE...] [options]\n"
    "       ringsim import gavel|elasticflow SRC -o OUT.csv\n"
    "       ringsim trace gavel|durations|sacct SRC -o OUT.csv [options]\n"
    "       ringsim trace synth -o OUT.csv --jobs N --profiles FILE --ref-type T --jobs-per-hour R [--cluster C]\n"
    "\n"
    "run: replay a trace (DESIGN 5 format) under one or several policies.\n"
    "  --trace FILE           job_id,submit_s,model,gpus,iterations[,min_gpus,max_gpus,elastic,user,spb]\n"
    "  --cluster SPEC         a cluster CSV (node,gpu_type,gpus[,intra_gbps,inter_gbps]) or\n"
    "                         TYPE:GPUS[,TYPE:GPUS...], e.g. k80:36,p100:36,v100:36\n"
    "  --gpus-per-node N      node size for the TYPE:GPUS form (default 4)\n"
    "  --profiles FILES       profile CSVs (model,gpu_type,num_gpus,global_batch,iters_per_s), merged\n"
    "  --policy P             one policy (default combined)\n"
    "  --compare P1,P2,...    several policies on the same input; ratios are against the first\n"
    "                         policies: fifo tiresias optimus besttype (baselines); static doubling\n"
    "                         hetero combined combined+spb combined-naive (ours, via the planner);\n"
    "                         combined-nopreempt: combined that never stops a running job nor\n"
    "                         moves a fixed-size one (the plugin with Preempt=no);\n"
    "                         combined-noguard: combined without the tail guard (TailGuard=no);\n"
    "                         combined-nohorizon: combined, each running job's whole remaining\n"
    "                         work counted in the placement (PlacementHorizon=no)\n"
    "  --round S              planning interval R in seconds (default 300); also plans on events\n"
    "  --no-event-planning    plan only every R seconds\n"
    "  --plan-gap S           plan on an event only if the last plan is S seconds old; otherwise\n"
    "                         at that time (coalesces bursts; default 2, the plugin's MinReplanGap;\n"
    "                         0: plan on every event)\n"
    "  --restart S            restart cost C per resize or resume, seconds (default 30)\n"
    "  --min-gain X           resize only for a gain > X * C (default 2)\n"
    "  --min-interval S       at most one resize per S seconds per job (default 300)\n"
    "  --samples K            categories sampled by the hetero placement (default 64)\n"
    "  --fairness F           finish-time fairness bound of doubling and combined: GPUs left\n"
    "                         after every job's minimum go first to jobs that would finish later\n"
    "                         than F x their time alone at their requested size (0: off)\n"
    "  --late-factor X        starvation bound of combined: an elastic job that at its\n"
    "                         minimum would finish later than X x F x its time alone at its\n"
    "                         requested size starts at that size (at most 1/8 of the cluster)\n"
    "                         and is not shrunk while running (default 1.5; 0: off)\n"
    "  --lend-horizon S       combined: GPUs above a job's request are valued as kept S\n"
    "                         seconds, and a lender ahead of its time alone gives them back\n"
    "                         to a waiting job (default 1800, LendHorizon in ringsched.conf;\n"
    "                         0: valued as kept to the end)\n"
    "  --lend-arrivals N      combined: the lend horizon is at least N mean gaps between\n"
    "                         arrivals, as the planning passes see them (default 3,\n"
    "                         LendArrivals in ringsched.conf; 0: the horizon alone)\n"
    "  --replace-slower X     combined: a running job whose GPUs run it X times slower than\n"
    "                         the fastest type it may use is placed again each pass, also\n"
    "                         while jobs wait (default 4, ReplaceSlower in ringsched.conf;\n"
    "                         0: kept in place)\n"
    "  --fair-placement X     combined: a job held at its fairness floor is charged X times\n"
    "                         the time it loses on nodes slower than its floor's GPUs on the\n"
    "                         fewest nodes (default 2, FairPlacement in ringsched.conf; 0: off)\n"
    "  --window N             pending jobs passed to the planner per round (default 0: all)\n"
    "  --hold-out M1,M2       hide these models' profiles from the policies (the engine still uses\n"
    "                         them): the unseen-model experiment\n"
    "  --features FILE        model features (DESIGN 5) for the planner's model similarity\n"
    "                         (e.g. data/model_features.csv); reference type: the first of the\n"
    "                         cluster's types profiled for every seen model\n"
    "  --seed N               seed of the planner's sampling (default 1)\n"
    "  --report FILE          JSON report (DESIGN 5); --no-job-rows leaves the per-job rows out\n"
    "  --plots DIR            JCT CDF, GPU utilisation and GPUs-per-job plots (PNG + SVG, gnuplot)\n"
    "  --quiet                no progress line\n"
    "\n"
    "trace: import a trace into the DESIGN 5 format.\n"
    "  gavel SRC              Gavel's philly_vc_jobs_seed0.csv (total_steps are iterations)\n"
    "  durations SRC          ITP clusterNN.csv or philly_job_distribution.csv: a model is drawn per\n"
    "                         job, iterations = duration * v(model, --ref-type, gpus)\n"
    "  sacct SRC              `sacct --parsable2 -o JobID,Submit,Start,End,AllocTRES[,State,User]`\n"
    "  synth                  synthetic trace (--jobs N, --min-s, --max-s run-time range; --cluster C caps\n"
    "                         sizes at C's largest pool of one GPU type)\n"
    "  --profiles FILES       (durations, sacct, synth) speeds that turn durations into iterations\n"
    "  --ref-type T           reference GPU type of the durations\n"
    "  --models M1,M2         models to draw from (default: all profiled on the reference type)\n"
    "  --jobs-per-hour R      arrival rate where the source has no submit times\n"
    "  --max-gpus N           elastic range [1, max(gpus, N)] (default 32); --inelastic: fixed sizes\n"
    "  --spb-fraction F       share of jobs marked SPB-capable (default 0)\n"
    "  --time-scale X         multiply durations by X; --limit N: first N jobs only\n"
    "  --seed N               seed of every draw (default 1)\n"
    "\n"
    "import: regenerate a profile CSV from a reference table.\n"
    "  gavel SRC              Gavel throughputs_isolated.csv\n"
    "  elasticflow DIR        ElasticFlow folder with throughputs_<TYPE>/<model>.csv\n";

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> opt;
  std::set<std::string> flags;
};

Args parse_args(int argc, char** argv, int first, const std::set<std::string>& with_value,
                const std::set<std::string>& flags) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0 || s == "-o") {
      std::string key = s == "-o" ? "--output" : s;
      std::string val;
      size_t eq = key.find('=');
      if (eq != std::string::npos) {
        val = key.substr(eq + 1);
        key = key.substr(0, eq);
        if (!with_value.count(key)) throw InputError("option " + key + " takes no value");
        a.opt[key] = val;
      } else if (with_value.count(key)) {
        if (i + 1 >= argc) throw InputError("option " + key + " needs a value");
        a.opt[key] = argv[++i];
      } else if (flags.count(key)) {
        a.flags.insert(key);
      } else {
        throw InputError("unknown option " + s + " (see ringsim --help)");
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

double number_opt(const Args& a, const std::string& key, double def, double lo, double hi) {
  auto it = a.opt.find(key);
  if (it == a.opt.end()) return def;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end || errno || !std::isfinite(v) || v < lo || v > hi) {
    std::ostringstream m;
    m << key << " '" << it->second << "': expected a number in [" << lo << ", " << hi << "]";
    throw InputError(m.str());
  }
  return v;
}

std::string str_opt(const Args& a, const std::string& key, const std::string& def = "") {
  auto it = a.opt.find(key);
  return it == a.opt.end() ? def : it->second;
}

std::string need_opt(const Args& a, const std::string& key) {
  auto it = a.opt.find(key);
  if (it == a.opt.end() || it->second.empty()) throw InputError("missing " + key + " (see ringsim --help)");
  return it->second;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

ringsched::ProfileTable load_profiles(const std::string& list) {
  ringsched::ProfileTable t;
  for (const std::string& f : split_list(list)) t.merge(ringsched::ProfileTable::load_csv(f));
  if (t.points().empty()) throw InputError("no profiles loaded from '" + list + "'");
  return t;
}

// A cluster CSV, or TYPE:GPUS[,TYPE:GPUS...] cut into nodes of gpus_per_node.
ringsched::Cluster load_cluster(const std::string& spec, int gpus_per_node) {
  struct stat st;
  if (stat(spec.c_str(), &st) == 0) return ringsched::Cluster::load_csv(spec);
  if (spec.find(':') == std::string::npos)
    throw InputError("--cluster '" + spec + "': no such file, and not TYPE:GPUS[,TYPE:GPUS...]");
  ringsched::Cluster c;
  for (const std::string& part : split_list(spec)) {
    size_t colon = part.find(':');
    std::string type = ringsched::normalize_type(part.substr(0, colon));
    char* end = nullptr;
    long gpus = colon == std::string::npos ? -1 : std::strtol(part.c_str() + colon + 1, &end, 10);
    if (type.empty() || gpus < 1 || gpus > 10000000 || (end && *end))
      throw InputError("--cluster '" + spec + "': bad part '" + part + "' (expected TYPE:GPUS)");
    for (long i = 0; gpus > 0; ++i) {
      ringsched::Node n;
      n.name = type + "-" + std::to_string(i);
      n.gpu_type = type;
      n.gpus = static_cast<int>(std::min<long>(gpus, gpus_per_node));
      gpus -= n.gpus;
      c.nodes.push_back(n);
    }
  }
  c.validate();
  return c;
}

int cmd_run(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      {"--trace", "--cluster", "--gpus-per-node", "--profiles", "--policy", "--compare", "--round",
                       "--restart", "--plan-gap", "--min-gain", "--min-interval", "--samples", "--window", "--hold-out", "--features", "--seed",
                       "--report", "--plots", "--fairness", "--late-factor", "--lend-horizon",
                       "--lend-arrivals", "--replace-slower", "--fair-placement"},
                      {"--quiet", "--no-job-rows", "--no-event-planning"});
  if (!a.positional.empty()) throw InputError("run: unexpected argument '" + a.positional[0] + "'");
  const std::string trace_path = need_opt(a, "--trace");
  ringsched::Cluster cluster =
      load_cluster(need_opt(a, "--cluster"), static_cast<int>(number_opt(a, "--gpus-per-node", 4, 1, 1024)));
  ringsched::ProfileTable table = load_profiles(need_opt(a, "--profiles"));
  ringsched::ThroughputModel truth(table);
  std::vector<std::string> held = split_list(str_opt(a, "--hold-out"));
  ringsched::ProfileTable seen;
  for (const std::string& m : held)
    if (!table.has(m)) throw InputError("--hold-out: model '" + m + "' is not in the profiles");
  for (const ringsched::ProfilePoint& p : table.points())
    if (std::find(held.begin(), held.end(), p.model) == held.end()) seen.add(p);
  ringsched::ThroughputModel policy_model(held.empty() ? table : seen);

  Trace trace = Trace::load_csv(trace_path);
  SimConfig cfg;
  cfg.round_s = number_opt(a, "--round", 300, 1, 1e7);
  cfg.restart_s = number_opt(a, "--restart", 30, 0, 1e6);
  cfg.plan_on_events = !a.flags.count("--no-event-planning");
  // The plugin plans at most every MinReplanGap (default 2 s), events included: the simulation
  // coalesces events as the product does.
  cfg.min_plan_gap_s = number_opt(a, "--plan-gap", 2, 0, 1e7);
  cfg.progress = !a.flags.count("--quiet");
  PolicyOptions po;
  po.costs.restart_s = cfg.restart_s;
  po.costs.min_gain_multiple = number_opt(a, "--min-gain", 2, 0, 1e6);
  po.costs.min_interval_s = number_opt(a, "--min-interval", 300, 0, 1e9);
  po.samples = static_cast<int>(number_opt(a, "--samples", 64, 1, 100000));
  po.seed = static_cast<unsigned>(number_opt(a, "--seed", 1, 0, 4294967295.0));
  po.window = static_cast<int>(number_opt(a, "--window", 0, 0, 1e9));
  po.fairness = number_opt(a, "--fairness", po.fairness, 0, 1e6);
  po.late_factor = number_opt(a, "--late-factor", po.late_factor, 0, 1e6);
  po.lend_horizon_s = number_opt(a, "--lend-horizon", po.lend_horizon_s, 0, 1e9);
  po.lend_arrivals = number_opt(a, "--lend-arrivals", po.lend_arrivals, 0, 1000);
  po.replace_slower = number_opt(a, "--replace-slower", po.replace_slower, 0, 1e6);
  if (po.replace_slower > 0 && po.replace_slower < 1)
    throw InputError("--replace-slower: expected 0 (off) or a factor >= 1, got " + a.opt["--replace-slower"]);
  po.fair_placement = number_opt(a, "--fair-placement", po.fair_placement, 0, 1000);
  std::vector<std::string> names =
      a.opt.count("--compare") ? split_list(a.opt["--compare"]) : std::vector<std::string>{str_opt(a, "--policy", "combined")};
  if (names.empty()) throw InputError("--compare: no policy named");
  if (a.opt.count("--compare") && a.opt.count("--policy")) throw InputError("give --policy or --compare, not both");

  if (a.opt.count("--features")) {
    ringsched::SimilarityConfig sc;
    sc.types = cluster.types();
    sc.reference_type = cluster.types().front();
    ringsched::ProfileTable& known = held.empty() ? table : seen;
    for (const std::string& t : cluster.types()) {
      bool everywhere = true;
      for (const std::string& m : known.models()) everywhere = everywhere && known.has(m, t);
      if (everywhere) { sc.reference_type = t; break; }
    }
    // As the plugins do by default (SimilarityK=auto): k, weights and fallback fitted by
    // leaving whole architectures of the known models out.
    ringsched::FeatureTable features = ringsched::FeatureTable::load_csv(a.opt["--features"]);
    sc = ringsched::fit_similarity(features, ringsched::known_ratios(known, sc.reference_type, sc.types), sc,
                                   ringsched::architecture_of)
             .config;
    po.similarity = std::make_shared<ringsched::SimilarityModel>(std::move(features), known, sc);
  }
  Engine engine(cluster, trace, truth, cfg);
  std::vector<std::unique_ptr<SchedulingPolicy>> policies;
  for (const std::string& n : names) policies.push_back(make_policy(n, po, policy_model));  // fail before running
  std::vector<SimResult> results;
  for (auto& p : policies) {
    results.push_back(engine.run(*p, policy_model));
  }
  std::cout << "trace " << trace_path << ": " << trace.jobs.size() << " jobs; cluster " << cluster.total_gpus()
            << " GPUs (";
  for (const std::string& t : cluster.types()) std::cout << t << ":" << cluster.gpus_of_type(t) << " ";
  std::cout << "\b)\n" << format_table(results);
  if (a.opt.count("--report")) {
    RunInfo info;
    info.trace = trace_path;
    info.cluster = a.opt["--cluster"];
    info.profiles = a.opt["--profiles"];
    info.gpus = cluster.total_gpus();
    info.jobs = static_cast<long>(trace.jobs.size());
    info.round_s = cfg.round_s;
    info.plan_gap_s = cfg.min_plan_gap_s;
    info.options = po;
    write_json_report(a.opt["--report"], info, results, !a.flags.count("--no-job-rows"));
    std::cout << "report: " << a.opt["--report"] << "\n";
  }
  if (a.opt.count("--plots")) {
    std::string err;
    if (!write_plots(a.opt["--plots"], results, &err)) {
      std::cerr << "ringsim: plots: " << err << "\n";
      return 1;
    }
    std::cout << "plots: " << a.opt["--plots"] << "/{jct_cdf,gpu_util,job_gpus_*}.{png,svg}\n";
  }
  return 0;
}

int cmd_import(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--output"}, {});
  if (a.positional.size() != 2) throw InputError("usage: ringsim import gavel|elasticflow SRC -o OUT.csv");
  const std::string out = need_opt(a, "--output");
  ringsched::ImportStats st;
  ringsched::ProfileTable t;
  if (a.positional[0] == "gavel") {
    t = ringsched::import_gavel_throughputs(a.positional[1], &st);
  } else if (a.positional[0] == "elasticflow") {
    // Every throughputs_<TYPE> folder under SRC; the type is the folder's suffix.
    std::string base = a.positional[1];
    int found = 0;
    for (const char* type : {"A100", "T4", "V100", "P100", "K80", "A10", "H100"}) {
      std::string dir = base + "/throughputs_" + type;
      struct stat s;
      if (stat(dir.c_str(), &s) != 0 || !S_ISDIR(s.st_mode)) continue;
      t.merge(ringsched::import_elasticflow_dir(dir, type, &st));
      ++found;
    }
    if (!found) throw InputError(base + ": no throughputs_<TYPE> folder found");
  } else {
    throw InputError("import: unknown source '" + a.positional[0] + "' (gavel or elasticflow)");
  }
  t.save_csv(out);
  std::cout << out << ": " << st.points << " points from " << st.rows << " rows";
  if (st.skipped) std::cout << "; skipped " << st.skipped << " (" << st.skipped_why << ")";
  std::cout << "\n";
  return 0;
}

int cmd_trace(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      {"--output", "--profiles", "--ref-type", "--models", "--jobs-per-hour", "--max-gpus",
                       "--spb-fraction", "--time-scale", "--limit", "--seed", "--jobs", "--min-s", "--max-s",
                       "--cluster", "--gpus-per-node"},
                      {"--inelastic"});
  if (a.positional.empty()) throw InputError("usage: ringsim trace gavel|durations|sacct SRC -o OUT.csv");
  const std::string kind = a.positional[0];
  const std::string out = need_opt(a, "--output");
  ImportOptions o;
  o.seed = static_cast<unsigned>(number_opt(a, "--seed", 1, 0, 4294967295.0));
  o.max_gpus_cap = static_cast<int>(number_opt(a, "--max-gpus", 32, 1, 1e6));
  o.elastic = !a.flags.count("--inelastic");
  o.spb_fraction = number_opt(a, "--spb-fraction", 0, 0, 1);
  o.ref_type = ringsched::normalize_type(str_opt(a, "--ref-type"));
  o.models = split_list(str_opt(a, "--models"));
  o.time_scale = number_opt(a, "--time-scale", 1, 1e-6, 1e6);
  o.limit = static_cast<long>(number_opt(a, "--limit", 0, 0, 1e9));
  o.jobs_per_hour = number_opt(a, "--jobs-per-hour", 0, 1e-6, 1e9);  // 0: not given
  ImportReport rep;
  Trace t;
  if (kind == "synth") {
    if (a.positional.size() != 1) throw InputError("usage: ringsim trace synth -o OUT.csv --jobs N ...");
    ringsched::ThroughputModel tm(load_profiles(need_opt(a, "--profiles")));
    if (a.opt.count("--cluster")) {
      // No job larger than the cluster's largest pool of one type: `run` would refuse it.
      const ringsched::Cluster c =
          load_cluster(a.opt["--cluster"], static_cast<int>(number_opt(a, "--gpus-per-node", 4, 1, 1024)));
      int pool = 0;
      for (const std::string& type : c.types()) pool = std::max(pool, c.gpus_of_type(type));
      o.max_gpus_cap = std::min(o.max_gpus_cap, ringsched::floor_power_of_two(std::max(1, pool)));
    }
    t = synth_trace(tm, static_cast<long>(number_opt(a, "--jobs", 1000, 1, 1e7)), number_opt(a, "--min-s", 600, 1, 1e9),
                    number_opt(a, "--max-s", 36000, 1, 1e9), o);
    rep.jobs = static_cast<int>(t.jobs.size());
  } else {
    if (a.positional.size() != 2) throw InputError("usage: ringsim trace " + kind + " SRC -o OUT.csv");
    const std::string src = a.positional[1];
    if (kind == "gavel") {
      t = import_gavel_trace(src, o, &rep);
    } else if (kind == "durations" || kind == "sacct") {
      ringsched::ThroughputModel tm(load_profiles(need_opt(a, "--profiles")));
      t = kind == "durations" ? import_duration_trace(src, tm, o, &rep) : import_sacct(src, tm, o, &rep);
    } else {
      throw InputError("trace: unknown source '" + kind + "' (gavel, durations, sacct or synth)");
    }
  }
  t.save_csv(out);
  if (kind == "synth")
    std::cout << out << ": " << t.jobs.size() << " jobs synthesised, up to " << o.max_gpus_cap << " GPUs each";
  else
    std::cout << out << ": " << t.jobs.size() << " jobs from " << rep.rows << " rows";
  if (rep.skipped) std::cout << "; skipped " << rep.skipped << " (" << rep.skipped_why << ")";
  std::cout << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "run") return cmd_run(argc, argv);
    if (cmd == "import") return cmd_import(argc, argv);
    if (cmd == "trace") return cmd_trace(argc, argv);
    std::cerr << "ringsim: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const InputError& e) {
    std::cerr << "ringsim: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ringsim: error: " << e.what() << "\n";
    return 3;
  }
}
