// SPDX-License-Identifier: GPL-2.0-or-later
// PlacementLocality (ringsched/placement.h): the placement's locality model applied to GPUs that
// someone else picked. The model itself stays where the placement keeps it
// (placement_support.cpp, placement_on_nodes()); this only builds the problem it needs once, so
// that a caller charging thousands of allocations (ringsim's engine) pays a lookup per node.
#include <map>

#include "placement_internal.h"

namespace ringsched {

struct PlacementLocality::State {
  PlacementProblem problem;
  PlacementSpeeds speeds;
  PlacementTopology topology;
  std::map<std::string, int> node_index;  // node name -> topology node

  explicit State(PlacementProblem p)
      : problem(std::move(p)), speeds(problem), topology(problem, speeds) {
    for (size_t k = 0; k < topology.nodes.size(); ++k)
      node_index.emplace(topology.nodes[k].name, static_cast<int>(k));
  }
};

namespace {

PlacementProblem whole_cluster_problem(const Cluster& cluster, const ThroughputModel& model,
                                       const std::vector<PlacementLocality::Job>& jobs) {
  PlacementProblem p;
  p.model = &model;
  p.cluster = cluster;
  // Every GPU of a node counts: the fewest nodes that could hold a job are those of the empty
  // cluster, whatever other jobs hold now.
  for (Node& n : p.cluster.nodes) n.free_gpus = -1;
  p.power_of_two = false;
  for (const PlacementLocality::Job& j : jobs) {
    PlacementJob pj;
    pj.model = j.model;
    pj.remaining = 1;
    pj.allowed_types = j.allowed_types;
    p.jobs.push_back(std::move(pj));
  }
  return p;
}

}  // namespace

PlacementLocality::PlacementLocality(const Cluster& cluster, const ThroughputModel& model,
                                     const std::vector<Job>& jobs)
    : state_(std::make_unique<State>(whole_cluster_problem(cluster, model, jobs))) {}

PlacementLocality::~PlacementLocality() = default;

double PlacementLocality::factor(int job, const std::map<std::string, int>& gpus_by_node) {
  if (job < 0 || job >= static_cast<int>(state_->problem.jobs.size()))
    throw InputError("placement locality: no job " + std::to_string(job));
  std::vector<std::pair<int, int>> package;
  for (const auto& [name, g] : gpus_by_node) {
    if (g <= 0) continue;
    auto it = state_->node_index.find(name);
    if (it == state_->node_index.end())
      throw InputError("placement locality: unknown node '" + name + "'");
    package.push_back({it->second, g});
  }
  if (package.size() <= 1) return 1.0;  // inside one node: the profile's own ring
  JobPlacement with = placement_on_nodes(state_->problem, state_->speeds, state_->topology, job, package);
  std::vector<int> counts(state_->speeds.num_types(), 0);
  for (const auto& [n, g] : package) counts[state_->topology.nodes[n].type] += g;
  double without = state_->speeds.speed(job, counts);
  if (!(without > 0) || !(with.iters_per_s > 0)) return 0.0;
  return std::min(1.0, with.iters_per_s / without);
}

}  // namespace ringsched
