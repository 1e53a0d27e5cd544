// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "ringsched/csv.h"

namespace ringsched {

InputError::InputError(const std::string& where, int line, const std::string& what)
    : std::runtime_error(line > 0 ? where + ":" + std::to_string(line) + ": " + what
                                  : where + ": " + what),
      where_(where),
      line_(line) {}

InputError::InputError(const std::string& what) : std::runtime_error(what) {}

std::string normalize_type(const std::string& type) {
  std::string t;
  for (char c : type)
    if (!std::isspace(static_cast<unsigned char>(c)))
      t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

std::string type_from_constraint(const std::string& features) {
  if (features.empty()) return "";
  for (char c : features)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return "";
  return normalize_type(features);
}

std::string type_set_name(const std::map<std::string, int>& gpus_by_type) {
  std::string out;
  for (const auto& [type, gpus] : gpus_by_type) out += (out.empty() ? "" : "+") + type;
  return out;
}

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

int floor_power_of_two(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int ceil_power_of_two(int n) {
  int p = 1;
  while (p < n && p < (1 << 30)) p *= 2;
  return p;
}

// --- cluster ------------------------------------------------------------------------------------

Cluster Cluster::load_csv(const std::string& path) {
  CsvFile f = CsvFile::read(path);
  int c_node = f.require_column("node");
  int c_type = f.require_column("gpu_type");
  int c_gpus = f.require_column("gpus");
  int c_intra = f.column("intra_gbps");
  int c_inter = f.column("inter_gbps");
  Cluster cluster;
  std::set<std::string> seen;
  for (const CsvRow& row : f.rows()) {
    Node n;
    n.name = f.str(row, c_node);
    if (n.name.empty()) f.fail(row, "empty node name");
    if (!seen.insert(n.name).second) f.fail(row, "node '" + n.name + "' listed twice");
    n.gpu_type = normalize_type(f.str(row, c_type));
    if (n.gpu_type.empty()) f.fail(row, "empty gpu_type for node '" + n.name + "'");
    long g = f.integer(row, c_gpus);
    if (g <= 0 || g > 1024) f.fail(row, "gpus must be 1..1024, got " + std::to_string(g));
    n.gpus = static_cast<int>(g);
    if (c_intra >= 0 && !f.str(row, c_intra).empty()) n.intra_gbps = f.number(row, c_intra);
    if (c_inter >= 0 && !f.str(row, c_inter).empty()) n.inter_gbps = f.number(row, c_inter);
    if (n.intra_gbps <= 0 || n.inter_gbps <= 0) f.fail(row, "link speeds must be positive");
    cluster.nodes.push_back(n);
  }
  if (cluster.nodes.empty()) throw InputError(path, 0, "cluster has no nodes");
  return cluster;
}

void Cluster::validate() const {
  if (nodes.empty()) throw InputError("cluster: no nodes");
  std::unordered_set<std::string_view> seen;  // thousands of nodes: hashed, not ordered
  seen.reserve(nodes.size());
  for (const Node& n : nodes) {
    if (n.name.empty()) throw InputError("cluster: a node has an empty name");
    if (!seen.insert(n.name).second) throw InputError("cluster: node '" + n.name + "' listed twice");
    if (n.gpus <= 0) throw InputError("cluster: node '" + n.name + "' has no GPUs");
    if (n.gpu_type.empty()) throw InputError("cluster: node '" + n.name + "' has no GPU type");
    if (n.free_gpus > n.gpus)
      throw InputError("cluster: node '" + n.name + "' has more free GPUs than GPUs");
  }
}

int Cluster::total_gpus() const {
  int t = 0;
  for (const Node& n : nodes) t += n.gpus;
  return t;
}

int Cluster::usable_gpus() const {
  int t = 0;
  for (const Node& n : nodes) t += n.usable();
  return t;
}

std::vector<std::string> Cluster::types() const {
  // Thousands of nodes of a few types: a look among the types seen, not a set insert per node.
  std::vector<std::string> out;
  for (const Node& n : nodes)
    if (std::find(out.begin(), out.end(), n.gpu_type) == out.end()) out.push_back(n.gpu_type);
  std::sort(out.begin(), out.end());
  return out;
}

int Cluster::gpus_of_type(const std::string& type) const {
  int t = 0;
  for (const Node& n : nodes)
    if (n.gpu_type == type) t += n.gpus;
  return t;
}

int Cluster::usable_of_type(const std::string& type) const {
  int t = 0;
  for (const Node& n : nodes)
    if (n.gpu_type == type) t += n.usable();
  return t;
}

const Node* Cluster::find(const std::string& node) const {
  for (const Node& n : nodes)
    if (n.name == node) return &n;
  return nullptr;
}

// --- profiles -----------------------------------------------------------------------------------

namespace {

constexpr double kMaxItersPerS = 1e9;
constexpr double kMaxGlobalBatch = 1e9;

void check_point(const ProfilePoint& p, const std::string& where, int line) {
  auto bad = [&](const std::string& what) {
    if (line > 0) throw InputError(where, line, what);
    throw InputError(where + ": " + what);
  };
  if (p.model.empty()) bad("empty model name");
  if (p.gpu_type.empty()) bad("empty gpu_type");
  if (p.num_gpus <= 0 || p.num_gpus > 100000) bad("num_gpus must be 1..100000");
  // Upper bounds far above any real step (a GPU launches ~1e5 kernels per second), low enough
  // that the model's products and extrapolations stay finite: 1e300 it/s made its fitted
  // curve NaN, an error that named neither the file nor the line.
  if (!(p.global_batch >= 0) || !(p.global_batch <= kMaxGlobalBatch))
    bad("global_batch must be 0..1e9");
  if (!(p.iters_per_s > 0) || !(p.iters_per_s <= kMaxItersPerS))
    bad("iters_per_s must be a positive number up to 1e9 for " + p.model + " on " + p.gpu_type);
}

bool same_key(const ProfilePoint& a, const ProfilePoint& b) {
  return a.model == b.model && a.gpu_type == b.gpu_type && a.num_gpus == b.num_gpus &&
         a.global_batch == b.global_batch;
}

}  // namespace

ProfileTable ProfileTable::load_csv(const std::string& path) {
  CsvFile f = CsvFile::read(path);
  int c_model = f.require_column("model");
  int c_type = f.require_column("gpu_type");
  int c_n = f.require_column("num_gpus");
  int c_b = f.require_column("global_batch");
  int c_v = f.require_column("iters_per_s");
  ProfileTable t;
  // A point measured twice in one file is ambiguous (which run is right?): an error naming both
  // lines, rather than the last row silently winning as add() would let it.
  std::map<std::tuple<std::string, std::string, int, double>, int> first_line;
  for (const CsvRow& row : f.rows()) {
    ProfilePoint p;
    p.model = f.str(row, c_model);
    p.gpu_type = normalize_type(f.str(row, c_type));
    long n = f.integer(row, c_n);
    if (n <= 0 || n > 100000) f.fail(row, "num_gpus must be 1..100000, got " + std::to_string(n));
    p.num_gpus = static_cast<int>(n);
    p.global_batch = f.number(row, c_b);
    p.iters_per_s = f.number(row, c_v);
    check_point(p, path, row.line);
    auto [seen, fresh] =
        first_line.emplace(std::make_tuple(p.model, p.gpu_type, p.num_gpus, p.global_batch), row.line);
    if (!fresh)
      f.fail(row, "duplicate profile point: " + p.model + " on " + std::to_string(p.num_gpus) +
                      " x " + p.gpu_type + " at global batch " + f.str(row, c_b) +
                      " is already given on line " + std::to_string(seen->second));
    t.points_.push_back(p);
  }
  return t;
}

void ProfileTable::save_csv(const std::string& path) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw InputError(path, 0, "cannot write");
    out << "model,gpu_type,num_gpus,global_batch,iters_per_s\n";
    out.precision(10);
    for (const ProfilePoint& p : points_)
      out << p.model << ',' << p.gpu_type << ',' << p.num_gpus << ',' << p.global_batch << ','
          << p.iters_per_s << '\n';
    if (!out) throw InputError(path, 0, "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw InputError(path, 0, "rename failed");
}

void ProfileTable::add(const ProfilePoint& p_in) {
  ProfilePoint p = p_in;
  p.gpu_type = normalize_type(p.gpu_type);
  check_point(p, "profile point", 0);
  for (ProfilePoint& q : points_)
    if (same_key(q, p)) {
      q = p;
      return;
    }
  points_.push_back(p);
}

void ProfileTable::merge(const ProfileTable& other) {
  for (const ProfilePoint& p : other.points_) add(p);
}

std::vector<ProfilePoint> ProfileTable::points_at_batch(const std::string& model,
                                                        const std::string& type,
                                                        double global_batch) const {
  std::vector<ProfilePoint> out;
  std::string t = normalize_type(type);
  for (const ProfilePoint& p : points_)
    if (p.model == model && p.gpu_type == t && p.global_batch == global_batch) out.push_back(p);
  std::sort(out.begin(), out.end(),
            [](const ProfilePoint& a, const ProfilePoint& b) { return a.num_gpus < b.num_gpus; });
  return out;
}

std::vector<ProfilePoint> ProfileTable::points_for(const std::string& model,
                                                   const std::string& type) const {
  std::string t = normalize_type(type);
  std::map<double, int> batches;
  for (const ProfilePoint& p : points_)
    if (p.model == model && p.gpu_type == t) batches[p.global_batch]++;
  if (batches.empty()) return {};
  // The most common batch; ties go to the smallest batch, so the choice is deterministic.
  double best = batches.begin()->first;
  int count = 0;
  for (const auto& [b, c] : batches)
    if (c > count) {
      best = b;
      count = c;
    }
  return points_at_batch(model, t, best);
}

std::vector<std::string> ProfileTable::models() const {
  std::set<std::string> s;
  for (const ProfilePoint& p : points_) s.insert(p.model);
  return {s.begin(), s.end()};
}

std::vector<std::string> ProfileTable::types() const {
  std::set<std::string> s;
  for (const ProfilePoint& p : points_) s.insert(p.gpu_type);
  return {s.begin(), s.end()};
}

std::vector<std::string> ProfileTable::types_for(const std::string& model) const {
  std::set<std::string> s;
  for (const ProfilePoint& p : points_)
    if (p.model == model) s.insert(p.gpu_type);
  return {s.begin(), s.end()};
}

bool ProfileTable::has(const std::string& model) const {
  for (const ProfilePoint& p : points_)
    if (p.model == model) return true;
  return false;
}

bool ProfileTable::has(const std::string& model, const std::string& type) const {
  std::string t = normalize_type(type);
  for (const ProfilePoint& p : points_)
    if (p.model == model && p.gpu_type == t) return true;
  return false;
}

// --- jobs ---------------------------------------------------------------------------------------

bool Job::allows(const std::string& type) const {
  if (allowed_types.empty()) return true;
  return std::find(allowed_types.begin(), allowed_types.end(), type) != allowed_types.end();
}

void Job::validate() const {
  std::string who = "job " + (id.empty() ? std::string("(no id)") : id);
  if (id.empty()) throw InputError(who + ": empty job id");
  if (model.empty()) throw InputError(who + ": no model");
  if (min_gpus < 1) throw InputError(who + ": min_gpus must be >= 1, got " + std::to_string(min_gpus));
  if (max_gpus < min_gpus)
    throw InputError(who + ": impossible GPU range " + std::to_string(min_gpus) + "-" +
                     std::to_string(max_gpus));
  if (max_gpus > 100000) throw InputError(who + ": max_gpus over 100000");
  if (!elastic && (requested_gpus < 1 || requested_gpus > 100000))
    throw InputError(who + ": requested_gpus must be 1..100000");
  if (!(iterations > 0) || !std::isfinite(iterations))
    throw InputError(who + ": iterations must be positive");
  if (!(remaining >= 0) || remaining > iterations * (1 + 1e-9))
    throw InputError(who + ": remaining iterations must be within 0..iterations");
  if (!(global_batch >= 0) || !std::isfinite(global_batch))
    throw InputError(who + ": global batch must be >= 0");
}

std::string why_impossible(const Job& job, const Cluster& cluster) {
  std::map<std::string, int> gpus_by_type;
  for (const Node& n : cluster.nodes) gpus_by_type[n.gpu_type] += n.gpus;
  return why_impossible(job, gpus_by_type);
}

std::string why_impossible(const Job& job, const std::map<std::string, int>& gpus_by_type) {
  for (const std::string& t : job.allowed_types)
    if (!gpus_by_type.count(t)) {
      std::string list;
      for (const auto& [have, g] : gpus_by_type) list += (list.empty() ? "" : ", ") + have;
      return "GPU type '" + t + "' is not in this cluster (types: " + list + ")";
    }
  int usable = 0;
  for (const auto& [t, g] : gpus_by_type)
    if (job.allows(t)) usable += g;
  int need = job.elastic ? job.min_gpus : job.requested_gpus;
  if (need > usable)
    return "needs at least " + std::to_string(need) + " GPUs but the cluster has " +
           std::to_string(usable) + " of the allowed types";
  return "";
}

}  // namespace ringsched
