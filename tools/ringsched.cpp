// ringsched: what the ring scheduler decided and why. Reads the plan that priority/ringsched
// writes (PlanFile in ringsched.conf) and the profiles the policy uses. See ringsched(8).
#include <jansson.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "configured_policy.h"
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

const char* str(json_t* o, const char* key) {
  json_t* v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : "";
}
long long num(json_t* o, const char* key) {
  json_t* v = json_object_get(o, key);
  return json_is_integer(v) ? json_integer_value(v) : json_is_real(v) ? static_cast<long long>(json_real_value(v)) : 0;
}
double real(json_t* o, const char* key) {
  json_t* v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : 0;
}

std::string shape(json_t* by_type) {
  std::string s;
  const char* t;
  json_t* n;
  json_object_foreach(by_type, t, n) {
    s += (s.empty() ? "" : "+") + std::to_string(json_integer_value(n)) + "x" + t;
  }
  return s.empty() ? "-" : s;
}

json_t* load_plan(const std::string& path) {
  json_error_t err;
  json_t* root = json_load_file(path.c_str(), 0, &err);
  if (!root) {
    throw ringsched::InputError(path, err.line, std::string("cannot read the plan: ") + err.text +
                                                    " (is priority/ringsched running?)");
  }
  if (!json_is_object(root) || !json_is_object(json_object_get(root, "plan"))) {
    json_decref(root);
    throw ringsched::InputError(path, 0, "not a ringsched plan (no \"plan\" object)");
  }
  return root;
}

json_t* plan_row(json_t* root, const std::string& id) {
  json_t* jobs = json_object_get(json_object_get(root, "plan"), "jobs");
  size_t i;
  json_t* j;
  json_array_foreach(jobs, i, j) if (id == str(j, "job_id")) return j;
  return nullptr;
}

json_t* job_row(json_t* root, const std::string& id) {
  size_t i;
  json_t* j;
  json_array_foreach(json_object_get(root, "jobs"), i, j) if (id == str(j, "job_id")) return j;
  return nullptr;
}

int cmd_status(const std::string& plan_path) {
  json_t* root = load_plan(plan_path);
  const long long at = num(root, "generated_at");
  json_t* plan = json_object_get(root, "plan");
  std::printf("plan: %s, policy %s, %lld s old, decided in %.2f ms\n", plan_path.c_str(),
              str(plan, "policy"), static_cast<long long>(std::time(nullptr)) - at,
              real(plan, "decision_ms"));
  std::map<std::string, std::pair<long long, long long>> by_type;
  size_t i;
  json_t* n;
  json_array_foreach(json_object_get(root, "cluster"), i, n) {
    auto& t = by_type[str(n, "gpu_type")];
    t.first += num(n, "free_gpus");
    t.second += num(n, "gpus");
  }
  std::printf("GPUs the planner may give to ring jobs (free + held by ring jobs):");
  for (const auto& [t, c] : by_type) std::printf(" %s %lld/%lld", t.c_str(), c.first, c.second);
  std::printf("\n\n%-8s %-8s %-20s %-7s %-10s %-10s %-5s %s\n", "JOBID", "STATE", "MODEL", "GPUS",
              "NOW", "PLANNED", "ORDER", "ACTION");
  json_t* j;
  json_array_foreach(json_object_get(root, "jobs"), i, j) {
    json_t* p = plan_row(root, str(j, "job_id"));
    // A pending job holds nothing yet: its request is not what it has "now".
    const bool job_running = std::string(str(j, "state")) == "running";
    const std::string now = job_running && num(j, "current_gpus") > 0
                                ? std::to_string(num(j, "current_gpus")) + "x" + str(j, "current_type")
                                : "-";
    const std::string range = std::to_string(num(j, "min_gpus")) + "-" + std::to_string(num(j, "max_gpus"));
    std::string action = "not planned (model unknown)";
    std::string planned = "-", order = "-";
    if (p) {
      planned = shape(json_object_get(p, "gpus_by_type"));
      order = std::to_string(num(p, "order"));
      const bool runs = json_is_true(json_object_get(p, "runs"));
      const bool running = std::string(str(j, "state")) == "running";
      action = !runs ? "waits" : json_is_true(json_object_get(p, "resize")) ? "resize"
               : running ? "keeps" : "starts";
    }
    std::printf("%-8s %-8s %-20s %-7s %-10s %-10s %-5s %s\n", str(j, "job_id"), str(j, "state"),
                str(j, "model"), range.c_str(), now.c_str(), planned.c_str(), order.c_str(),
                action.c_str());
  }
  json_decref(root);
  return 0;
}

int cmd_explain(const std::string& plan_path, const std::string& id) {
  json_t* root = load_plan(plan_path);
  json_t* j = job_row(root, id);
  json_t* p = plan_row(root, id);
  if (!j) {
    std::fprintf(stderr, "ringsched: job %s is not a pending or running ring job in %s\n", id.c_str(),
                 plan_path.c_str());
    json_decref(root);
    return 1;
  }
  std::printf("job %s: %s, model %s, GPUs %lld-%lld, %s\n", id.c_str(), str(j, "state"), str(j, "model"),
              num(j, "min_gpus"), num(j, "max_gpus"),
              json_is_true(json_object_get(j, "elastic")) ? "elastic" : "fixed size");
  if (num(j, "current_gpus") > 0)
    std::printf("  %s %lld x %s\n", std::string(str(j, "state")) == "running" ? "now:     " : "asks for:",
                num(j, "current_gpus"), str(j, "current_type"));
  std::printf("  progress: %.0f of %.0f iterations left (estimated)\n", real(j, "remaining"),
              real(j, "iterations"));
  if (!p) {
    std::printf("  plan:     none (the policy knows nothing of model %s)\n", str(j, "model"));
  } else {
    std::printf("  plan:     %s, order %lld%s\n", shape(json_object_get(p, "gpus_by_type")).c_str(),
                num(p, "order"), json_is_true(json_object_get(p, "resize")) ? ", resize requested" : "");
    size_t i;
    json_t* pl;
    json_array_foreach(json_object_get(p, "placement"), i, pl)
      std::printf("  place:    %s: %lld x %s\n", str(pl, "node"), num(pl, "gpus"), str(pl, "gpu_type"));
    if (real(p, "predicted_iters_per_s") > 0)
      std::printf("  speed:    %.3f iterations/s predicted, done in %.0f s\n",
                  real(p, "predicted_iters_per_s"), real(p, "predicted_finish_s"));
    if (real(p, "spb_depth") > 0 && real(p, "spb_depth") < 1)
      std::printf("  spb:      mean backprop depth %.2f\n", real(p, "spb_depth"));
    std::printf("  why:      %s\n", str(p, "reason"));
  }
  if (*str(j, "admin_comment")) std::printf("  recorded: %s\n", str(j, "admin_comment"));
  json_decref(root);
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
