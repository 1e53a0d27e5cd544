// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan_file.h"

#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "ringsched/model.h"

namespace ringsched {

namespace {

constexpr long long kMaxGpus = 1 << 20;
constexpr long long kMaxEpoch = 1LL << 40;
constexpr double kMaxReal = 1e300;

struct JsonRef {
  void operator()(json_t* j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonRef>;

// ---- writing ----

// jansson has no JSON for NaN or infinity: such a figure is written as null (read back as NaN).
json_t* real_json(double v) { return std::isfinite(v) ? json_real(v) : json_null(); }

json_t* node_json(const PlanFileNode& n) {
  json_t* o = json_object();
  json_object_set_new(o, "node", json_string(n.name.c_str()));
  json_object_set_new(o, "gpu_type", json_string(n.gpu_type.c_str()));
  json_object_set_new(o, "gpus", json_integer(n.gpus));
  json_object_set_new(o, "free_gpus", json_integer(n.free_gpus));
  return o;
}

json_t* job_json(const PlanFileJob& j) {
  json_t* o = json_object();
  json_object_set_new(o, "job_id", json_string(j.job_id.c_str()));
  json_object_set_new(o, "state", json_string(j.running ? "running" : "pending"));
  json_object_set_new(o, "model", json_string(j.model.c_str()));
  json_object_set_new(o, "min_gpus", json_integer(j.min_gpus));
  json_object_set_new(o, "max_gpus", json_integer(j.max_gpus));
  json_object_set_new(o, "elastic", json_boolean(j.elastic));
  json_object_set_new(o, "current_type", json_string(j.current_type.c_str()));
  json_object_set_new(o, "current_gpus", json_integer(j.current_gpus));
  if (j.has_progress) {
    json_object_set_new(o, "iterations", real_json(j.iterations));
    json_object_set_new(o, "remaining", real_json(j.remaining));
  }
  json_object_set_new(o, "admin_comment", json_string(j.admin_comment.c_str()));
  return o;
}

json_t* job_plan_json(const JobPlan& j) {
  json_t* o = json_object();
  json_object_set_new(o, "job_id", json_string(j.job_id.c_str()));
  json_object_set_new(o, "order", json_integer(j.order));
  json_object_set_new(o, "runs", json_boolean(j.runs));
  json_object_set_new(o, "gpus", json_integer(j.gpus));
  json_t* by_type = json_object();
  for (const auto& [type, gpus] : j.gpus_by_type) json_object_set_new(by_type, type.c_str(), json_integer(gpus));
  json_object_set_new(o, "gpus_by_type", by_type);
  json_t* placement = json_array();
  for (const Placement& p : j.placement) {
    json_t* po = json_object();
    json_object_set_new(po, "node", json_string(p.node.c_str()));
    json_object_set_new(po, "gpu_type", json_string(p.gpu_type.c_str()));
    json_object_set_new(po, "gpus", json_integer(p.gpus));
    json_array_append_new(placement, po);
  }
  json_object_set_new(o, "placement", placement);
  json_object_set_new(o, "resize", json_boolean(j.resize));
  json_object_set_new(o, "spb_depth", real_json(j.spb_depth));
  json_object_set_new(o, "predicted_iters_per_s", real_json(j.predicted_iters_per_s));
  json_object_set_new(o, "predicted_finish_s", real_json(j.predicted_finish_s));
  json_object_set_new(o, "reason", json_string(j.reason.c_str()));
  return o;
}

json_t* plan_json(const Plan& plan) {
  json_t* o = json_object();
  json_object_set_new(o, "policy", json_string(plan.policy.c_str()));
  json_object_set_new(o, "objective_s", real_json(plan.objective_s));
  json_object_set_new(o, "decision_ms", real_json(plan.decision_ms));
  json_object_set_new(o, "lend_horizon_s", real_json(plan.lend_horizon_s));
  json_object_set_new(o, "wake_s", real_json(plan.wake_s));
  json_t* jobs = json_array();
  for (const JobPlan& j : plan.jobs) json_array_append_new(jobs, job_plan_json(j));
  json_object_set_new(o, "jobs", jobs);
  return o;
}

json_t* file_json(const PlanFile& pf) {
  json_t* root = json_object();
  json_object_set_new(root, "generated_at", json_integer(pf.generated_at));
  json_object_set_new(root, "config", json_string(pf.config.c_str()));
  json_t* nodes = json_array();
  for (const PlanFileNode& n : pf.cluster) json_array_append_new(nodes, node_json(n));
  json_object_set_new(root, "cluster", nodes);
  json_t* jobs = json_array();
  for (const PlanFileJob& j : pf.jobs) json_array_append_new(jobs, job_json(j));
  json_object_set_new(root, "jobs", jobs);
  json_object_set_new(root, "plan", plan_json(pf.plan));
  return root;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// ---- reading ----

// Reads the fields of a parsed plan, naming a bad one by its place ("jobs[2].min_gpus").
class FieldReader {
 public:
  explicit FieldReader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(path_, 0, (where.empty() ? "" : where + ": ") + what);
  }
  static std::string at(const std::string& where, const char* key) {
    return where.empty() ? key : where + "." + key;
  }
  static std::string at(const std::string& where, size_t index) {
    return where + "[" + std::to_string(index) + "]";
  }

  json_t* member(json_t* obj, const std::string& where, const char* key) const {
    json_t* v = json_object_get(obj, key);
    if (!v) fail(at(where, key), "missing");
    return v;
  }
  json_t* object(json_t* obj, const std::string& where, const char* key) const {
    json_t* v = member(obj, where, key);
    if (!json_is_object(v)) fail(at(where, key), "expected an object");
    return v;
  }
  json_t* array(json_t* obj, const std::string& where, const char* key) const {
    json_t* v = member(obj, where, key);
    if (!json_is_array(v)) fail(at(where, key), "expected an array");
    return v;
  }
  std::string str(json_t* obj, const std::string& where, const char* key) const {
    json_t* v = member(obj, where, key);
    if (!json_is_string(v)) fail(at(where, key), "expected a string");
    return json_string_value(v);
  }
  bool boolean(json_t* obj, const std::string& where, const char* key) const {
    json_t* v = member(obj, where, key);
    if (!json_is_boolean(v)) fail(at(where, key), "expected true or false");
    return json_is_true(v);
  }
  long long integer(json_t* v, const std::string& where, long long lo, long long hi) const {
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
      fail(where, "expected a whole number in " + std::to_string(lo) + ".." + std::to_string(hi));
    return json_integer_value(v);
  }
  long long integer(json_t* obj, const std::string& where, const char* key, long long lo, long long hi) const {
    return integer(member(obj, where, key), at(where, key), lo, hi);
  }
  int count(json_t* obj, const std::string& where, const char* key) const {
    return static_cast<int>(integer(obj, where, key, 0, kMaxGpus));
  }
  // A figure: a number in [lo, hi], or null for one that was not finite (NaN).
  double real(json_t* obj, const std::string& where, const char* key, double lo = 0, double hi = kMaxReal) const {
    json_t* v = member(obj, where, key);
    if (json_is_null(v)) return std::numeric_limits<double>::quiet_NaN();
    const double x = json_is_number(v) ? json_number_value(v) : -INFINITY;
    if (!json_is_number(v) || !(x >= lo && x <= hi))
      fail(at(where, key), "expected a number in " + fmt(lo) + ".." + fmt(hi) + " (or null)");
    return x;
  }

 private:
  static std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  std::string path_;
};

PlanFileNode read_node(const FieldReader& r, json_t* o, const std::string& where) {
  PlanFileNode n;
  n.name = r.str(o, where, "node");
  n.gpu_type = r.str(o, where, "gpu_type");
  n.gpus = r.count(o, where, "gpus");
  n.free_gpus = r.count(o, where, "free_gpus");
  return n;
}

PlanFileJob read_job(const FieldReader& r, json_t* o, const std::string& where) {
  PlanFileJob j;
  j.job_id = r.str(o, where, "job_id");
  const std::string state = r.str(o, where, "state");
  if (state != "running" && state != "pending")
    r.fail(FieldReader::at(where, "state"), "expected \"running\" or \"pending\", not \"" + state + "\"");
  j.running = state == "running";
  j.model = r.str(o, where, "model");
  j.min_gpus = r.count(o, where, "min_gpus");
  j.max_gpus = r.count(o, where, "max_gpus");
  j.elastic = r.boolean(o, where, "elastic");
  j.current_type = r.str(o, where, "current_type");
  j.current_gpus = r.count(o, where, "current_gpus");
  j.has_progress = json_object_get(o, "iterations") || json_object_get(o, "remaining");
  if (j.has_progress) {
    j.iterations = r.real(o, where, "iterations");
    j.remaining = r.real(o, where, "remaining");
  }
  j.admin_comment = r.str(o, where, "admin_comment");
  return j;
}

JobPlan read_job_plan(const FieldReader& r, json_t* o, const std::string& where) {
  JobPlan j;
  j.job_id = r.str(o, where, "job_id");
  j.order = static_cast<int>(r.integer(o, where, "order", 0, INT_MAX));
  j.runs = r.boolean(o, where, "runs");
  j.gpus = r.count(o, where, "gpus");
  const std::string by_type_at = FieldReader::at(where, "gpus_by_type");
  const char* type;
  json_t* gpus;
  json_object_foreach(r.object(o, where, "gpus_by_type"), type, gpus) {
    j.gpus_by_type[type] = static_cast<int>(r.integer(gpus, by_type_at + "." + type, 0, kMaxGpus));
  }
  const std::string placement_at = FieldReader::at(where, "placement");
  size_t i;
  json_t* p;
  json_array_foreach(r.array(o, where, "placement"), i, p) {
    const std::string pw = FieldReader::at(placement_at, i);
    if (!json_is_object(p)) r.fail(pw, "expected an object");
    j.placement.push_back(Placement{r.str(p, pw, "node"), r.str(p, pw, "gpu_type"), r.count(p, pw, "gpus")});
  }
  j.resize = r.boolean(o, where, "resize");
  j.spb_depth = r.real(o, where, "spb_depth", 0, 1);
  j.predicted_iters_per_s = r.real(o, where, "predicted_iters_per_s");
  j.predicted_finish_s = r.real(o, where, "predicted_finish_s");
  j.reason = r.str(o, where, "reason");
  return j;
}

// The rows of array `key` of `obj`, each an object, read by `read_row`.
template <class Row, class ReadRow>
std::vector<Row> read_rows(const FieldReader& r, json_t* obj, const std::string& where, const char* key,
                           ReadRow read_row) {
  std::vector<Row> rows;
  const std::string array_at = FieldReader::at(where, key);
  size_t i;
  json_t* o;
  json_array_foreach(r.array(obj, where, key), i, o) {
    const std::string row_at = FieldReader::at(array_at, i);
    if (!json_is_object(o)) r.fail(row_at, "expected an object");
    rows.push_back(read_row(r, o, row_at));
  }
  return rows;
}

}  // namespace

const PlanFileJob* PlanFile::job(const std::string& job_id) const {
  for (const PlanFileJob& j : jobs)
    if (j.job_id == job_id) return &j;
  return nullptr;
}

void write_plan_file(const std::string& path, const PlanFile& plan) {
  const JsonPtr root(file_json(plan));
  char* text = json_dumps(root.get(), JSON_INDENT(1) | JSON_SORT_KEYS);
  if (!text) throw InputError(path, 0, "cannot write the plan: out of memory");
  const std::string body = std::string(text) + "\n";
  std::free(text);
  // Made afresh: a file left at the temporary name (or a link put there) is never written through.
  const std::string tmp = path + ".tmp";
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT)
    throw InputError(path, 0, "cannot write the plan: removing the old " + tmp + " failed: " + std::strerror(errno));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path, 0, "cannot write the plan: creating " + tmp + " failed: " + std::strerror(errno));
  // The first step that fails, with its errno; the file is closed whatever happened.
  std::string failed;
  int why = 0;
  auto step = [&](bool ok, const char* what) {
    if (failed.empty() && !ok) {
      failed = what;
      why = errno;
    }
  };
  step(::fchmod(fd, 0644) == 0, "setting its mode");  // whatever the umask
  if (failed.empty()) step(write_all(fd, body.data(), body.size()), "writing it");
  if (failed.empty()) step(::fsync(fd) == 0, "flushing it to disk");
  step(::close(fd) == 0, "closing it");
  if (failed.empty()) step(::rename(tmp.c_str(), path.c_str()) == 0, "renaming it into place");
  if (!failed.empty()) {
    ::unlink(tmp.c_str());
    throw InputError(path, 0, "cannot write the plan: " + failed + " failed: " + std::strerror(why));
  }
}

PlanFile read_plan_file(const std::string& path) {
  json_error_t err;
  const JsonPtr root(json_load_file(path.c_str(), JSON_REJECT_DUPLICATES, &err));
  if (!root) {
    // jansson gives a line only for text it could read.
    if (err.line <= 0)
      throw InputError(path, 0, std::string("cannot read the plan: ") + err.text + " (is priority/ringsched running?)");
    throw InputError(path, err.line, "not a readable plan (column " + std::to_string(err.column) + ": " + err.text +
                                         "; truncated, or not written by priority/ringsched?)");
  }
  const FieldReader r(path);
  if (!json_is_object(root.get())) r.fail("", "not a ringsched plan (expected a JSON object)");
  if (!json_is_object(json_object_get(root.get(), "plan")))
    r.fail("", "not a ringsched plan (no \"plan\" object)");
  PlanFile pf;
  pf.generated_at = r.integer(root.get(), "", "generated_at", 0, kMaxEpoch);
  pf.config = r.str(root.get(), "", "config");
  pf.cluster = read_rows<PlanFileNode>(r, root.get(), "", "cluster", read_node);
  pf.jobs = read_rows<PlanFileJob>(r, root.get(), "", "jobs", read_job);
  json_t* plan = json_object_get(root.get(), "plan");
  pf.plan.policy = r.str(plan, "plan", "policy");
  pf.plan.objective_s = r.real(plan, "plan", "objective_s");
  pf.plan.decision_ms = r.real(plan, "plan", "decision_ms");
  // Absent from plans written before the lend horizon followed arrivals (2026-11).
  if (json_object_get(plan, "lend_horizon_s")) pf.plan.lend_horizon_s = r.real(plan, "plan", "lend_horizon_s");
  // Absent from plans written before the plan recorded its wake (2026-12): none.
  if (json_object_get(plan, "wake_s")) pf.plan.wake_s = r.real(plan, "plan", "wake_s");
  pf.plan.jobs = read_rows<JobPlan>(r, plan, "plan", "jobs", read_job_plan);
  return pf;
}

}  // namespace ringsched
