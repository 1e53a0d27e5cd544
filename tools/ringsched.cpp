// SPDX-License-Identifier: GPL-2.0-or-later
// ringsched: what the ring scheduler decided and why. Reads the plan that priority/ringsched
// writes (PlanFile in ringsched.conf) and the profiles the policy uses. See ringsched(8).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "configured_policy.h"
#include "plan_file.h"
#include "ringsched_conf.h"

namespace {

const char* kUsage =
    "usage: ringsched [--conf FILE] [--plan FILE] COMMAND\n"
    "\n"
    "commands:\n"
    "  status           the cluster's GPUs and every ring job: now, planned, order, resize\n"
    "  explain JOBID    why the job got its GPU type, count and place (or why it waits)\n"
    "  profiles [MODEL] speeds the policy knows per GPU type (one GPU), best type first;\n"
    "                   with MODEL: every point of that model, and predictions if it has none\n"
    "\n"
    "options:\n"
    "  --conf FILE      ringsched.conf (default: $RINGSCHED_CONF, else next to $SLURM_CONF,\n"
    "                   else /etc/slurm/ringsched.conf)\n"
    "  --plan FILE      plan JSON (default: $RINGSCHED_PLAN, else PlanFile of ringsched.conf)\n"
    "  -h, --help       this text\n";

std::string default_conf() {
  if (const char* e = std::getenv("RINGSCHED_CONF"); e && *e) return e;
  if (const char* s = std::getenv("SLURM_CONF"); s && *s) {
    std::string p = s;
    const size_t slash = p.rfind('/');
    return (slash == std::string::npos ? std::string(".") : p.substr(0, slash)) + "/ringsched.conf";
  }
  return "/etc/slurm/ringsched.conf";
}

// "4xv100+2xp100", or "-" for nothing.
std::string shape(const std::map<std::string, int>& by_type) {
  std::string s;
  for (const auto& [type, gpus] : by_type) s += (s.empty() ? "" : "+") + std::to_string(gpus) + "x" + type;
  return s.empty() ? "-" : s;
}

int cmd_status(const std::string& plan_path) {
  const ringsched::PlanFile pf = ringsched::read_plan_file(plan_path);
  std::printf("plan: %s, policy %s, %lld s old, decided in %.2f ms", plan_path.c_str(), pf.plan.policy.c_str(),
              static_cast<long long>(std::time(nullptr)) - pf.generated_at, pf.plan.decision_ms);
  if (pf.plan.lend_horizon_s > 0) std::printf(", lend horizon %.0f s", pf.plan.lend_horizon_s);
  // Plan::wake_s: a lender's grace ends while a starving job waits; the thread plans again then.
  if (pf.plan.wake_s > 0)
    std::printf(", plans again %.0f s after it (a hold ends while a starving job waits)",
                pf.plan.wake_s - static_cast<double>(pf.generated_at));
  std::printf("\n");
  std::map<std::string, std::pair<long long, long long>> by_type;
  for (const ringsched::PlanFileNode& n : pf.cluster) {
    auto& t = by_type[n.gpu_type];
    t.first += n.free_gpus;
    t.second += n.gpus;
  }
  std::printf("GPUs the planner may give to ring jobs (free + held by ring jobs):");
  for (const auto& [t, c] : by_type) std::printf(" %s %lld/%lld", t.c_str(), c.first, c.second);
  std::printf("\n\n%-8s %-8s %-20s %-7s %-10s %-10s %-5s %s\n", "JOBID", "STATE", "MODEL", "GPUS",
              "NOW", "PLANNED", "ORDER", "ACTION");
  for (const ringsched::PlanFileJob& j : pf.jobs) {
    const ringsched::JobPlan* p = pf.plan.find(j.job_id);
    // A pending job holds nothing yet: its request is not what it has "now".
    const std::string now =
        j.running && j.current_gpus > 0 ? std::to_string(j.current_gpus) + "x" + j.current_type : "-";
    const std::string range = std::to_string(j.min_gpus) + "-" + std::to_string(j.max_gpus);
    std::string action = "not planned (model unknown)";
    std::string planned = "-", order = "-";
    if (p) {
      planned = shape(p->gpus_by_type);
      order = std::to_string(p->order);
      action = !p->runs ? "waits" : p->resize ? "resize" : j.running ? "keeps" : "starts";
    }
    std::printf("%-8s %-8s %-20s %-7s %-10s %-10s %-5s %s\n", j.job_id.c_str(), j.running ? "running" : "pending",
                j.model.c_str(), range.c_str(), now.c_str(), planned.c_str(), order.c_str(), action.c_str());
  }
  return 0;
}

int cmd_explain(const std::string& plan_path, const std::string& id) {
  const ringsched::PlanFile pf = ringsched::read_plan_file(plan_path);
  const ringsched::PlanFileJob* j = pf.job(id);
  const ringsched::JobPlan* p = pf.plan.find(id);
  if (!j) {
    std::fprintf(stderr, "ringsched: job %s is not a pending or running ring job in %s\n", id.c_str(),
                 plan_path.c_str());
    return 1;
  }
  std::printf("job %s: %s, model %s, GPUs %d-%d, %s\n", id.c_str(), j->running ? "running" : "pending",
              j->model.c_str(), j->min_gpus, j->max_gpus, j->elastic ? "elastic" : "fixed size");
  if (j->current_gpus > 0)
    std::printf("  %s %d x %s\n", j->running ? "now:     " : "asks for:", j->current_gpus, j->current_type.c_str());
  std::printf("  progress: %.0f of %.0f iterations left (estimated)\n", j->remaining, j->iterations);
  if (!p) {
    std::printf("  plan:     none (the policy knows nothing of model %s)\n", j->model.c_str());
  } else {
    std::printf("  plan:     %s, order %d%s\n", shape(p->gpus_by_type).c_str(), p->order,
                p->resize ? ", resize requested" : "");
    for (const ringsched::Placement& pl : p->placement)
      std::printf("  place:    %s: %d x %s\n", pl.node.c_str(), pl.gpus, pl.gpu_type.c_str());
    if (p->predicted_iters_per_s > 0)
      std::printf("  speed:    %.3f iterations/s predicted, done in %.0f s\n", p->predicted_iters_per_s,
                  p->predicted_finish_s);
    if (p->spb_depth > 0 && p->spb_depth < 1) std::printf("  spb:      mean backprop depth %.2f\n", p->spb_depth);
    std::printf("  why:      %s\n", p->reason.c_str());
  }
  if (!j->admin_comment.empty()) std::printf("  recorded: %s\n", j->admin_comment.c_str());
  return 0;
}

int cmd_profiles(const std::string& conf_path, const std::string& model) {
  ringsched::ConfiguredPolicy policy(ringsched::RingschedConf::load(conf_path));
  const ringsched::ThroughputModel& tm = policy.model();
  const std::vector<std::string> types = tm.table().types();
  if (model.empty()) {
    std::printf("%-24s", "MODEL");
    for (const auto& t : types) std::printf(" %10s", t.c_str());
    std::printf("  BEST   (iterations/s on one GPU; from %s)\n", conf_path.c_str());
    for (const std::string& m : tm.table().models()) {
      std::printf("%-24s", m.c_str());
      for (const auto& t : types) {
        const double v = tm.iters_per_s(m, t, 1);
        if (v > 0) std::printf(" %10.3f", v); else std::printf(" %10s", "-");
      }
      const auto ranked = policy.rank_types(m, types);
      std::printf("  %s\n", ranked.empty() ? "-" : ranked.front().c_str());
    }
    return 0;
  }
  std::string why;
  const bool measured = tm.table().has(model);
  if (!policy.prepare_model(model, types, why)) {
    std::fprintf(stderr, "ringsched: %s\n", why.c_str());
    return 1;
  }
  std::printf("model %s (%s)\n", model.c_str(),
              measured ? "measured" : "predicted from similar models");
  std::printf("%-8s %6s %12s %s\n", "TYPE", "GPUS", "ITERS/S", "SOURCE");
  for (const auto& t : policy.rank_types(model, types))
    for (int n = 1; n <= 8; n *= 2)
      std::printf("%-8s %6d %12.3f %s\n", t.c_str(), n, policy.model().iters_per_s(model, t, n),
                  policy.model().is_predicted(model, t) ? "predicted" : "profile/fit");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string conf, plan;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if ((a == "--conf" || a == "--plan") && i + 1 < argc) {
      (a == "--conf" ? conf : plan) = argv[++i];
    } else if (a.rfind("--conf=", 0) == 0) {
      conf = a.substr(7);
    } else if (a.rfind("--plan=", 0) == 0) {
      plan = a.substr(7);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ringsched: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      args.push_back(a);
    }
  }
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    if (conf.empty()) conf = default_conf();
    const std::string& cmd = args[0];
    if (cmd == "profiles") return cmd_profiles(conf, args.size() > 1 ? args[1] : "");
    if (cmd != "status" && cmd != "explain") {
      std::fprintf(stderr, "ringsched: unknown command '%s'\n%s", cmd.c_str(), kUsage);
      return 2;
    }
    if (plan.empty()) {
      if (const char* e = std::getenv("RINGSCHED_PLAN"); e && *e) plan = e;
      else plan = ringsched::RingschedConf::load(conf).plan_file;
      if (plan.empty())
        throw ringsched::InputError(conf, 0, "no PlanFile set; give --plan FILE");
    }
    if (cmd == "status") return cmd_status(plan);
    if (args.size() != 2) {
      std::fprintf(stderr, "ringsched: explain takes one JOBID\n");
      return 2;
    }
    return cmd_explain(plan, args[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringsched: %s\n", e.what());
    return 1;
  }
}
