#include "ringsched/free_gpus.h"

#include <algorithm>

namespace ringsched {

FreeGpus::FreeGpus(const Cluster& cluster) {
  auto layout = std::make_shared<Layout>();
  layout->types = cluster.types();
  layout->nodes_of_type.assign(layout->types.size(), {});
  free_of_type_.assign(layout->types.size(), 0);
  for (const Node& n : cluster.nodes) {
    int node = static_cast<int>(free_.size());
    int t = static_cast<int>(std::lower_bound(layout->types.begin(), layout->types.end(),
                                              n.gpu_type) - layout->types.begin());
    layout->names.push_back(n.name);
    layout->type_of.push_back(t);
    layout->nodes_of_type[t].push_back(node);
    layout->by_name.emplace(n.name, node);
    free_.push_back(n.usable());
    free_of_type_[t] += n.usable();
  }
  layout_ = std::move(layout);
}

int FreeGpus::node_index(const std::string& name) const {
  auto it = layout_->by_name.find(name);
  return it == layout_->by_name.end() ? -1 : it->second;
}

const std::string& FreeGpus::node_name(int node) const { return layout_->names[node]; }

const std::string& FreeGpus::node_type(int node) const {
  return layout_->types[layout_->type_of[node]];
}

int FreeGpus::type_index(const std::string& type) const {
  auto it = std::lower_bound(layout_->types.begin(), layout_->types.end(), type);
  return it == layout_->types.end() || *it != type ? -1
                                                   : static_cast<int>(it - layout_->types.begin());
}

int FreeGpus::free_of_type(const std::string& type) const {
  int t = type_index(type);
  return t < 0 ? 0 : free_of_type_[t];
}

int FreeGpus::free_of(const std::vector<std::string>& types) const {
  int sum = 0;
  if (types.empty()) {
    for (int f : free_of_type_) sum += f;
  } else {
    for (const std::string& t : types) sum += free_of_type(t);
  }
  return sum;
}

void FreeGpus::take_at(int node, int n) {
  free_[node] -= n;
  free_of_type_[layout_->type_of[node]] -= n;
}

void FreeGpus::take(const std::map<std::string, int>& allocation) {
  for (const auto& [name, n] : allocation) {
    int node = node_index(name);
    if (node >= 0) take_at(node, n);
  }
}

std::vector<std::pair<int, int>> FreeGpus::take_among(int n, const std::vector<int>& candidates) {
  std::vector<std::pair<int, int>> out;
  if (n <= 0) return out;
  int total = 0;
  for (int i : candidates) total += std::max(0, free_[i]);
  if (total < n) return out;
  // Most free first (ties: lower index); each step ends on the smallest node that holds all that
  // is left, if there is one, else takes the node with the most free GPUs whole.
  std::vector<int> by_room;
  for (int i : candidates)
    if (free_[i] > 0) by_room.push_back(i);
  std::stable_sort(by_room.begin(), by_room.end(),
                   [&](int a, int b) { return free_[a] > free_[b]; });
  for (size_t next = 0; n > 0; ++next) {
    int fit = -1;
    for (size_t k = next; k < by_room.size() && free_[by_room[k]] >= n; ++k)
      if (fit < 0 || free_[by_room[k]] < free_[fit]) fit = by_room[k];
    int node = fit >= 0 ? fit : by_room[next];
    int x = std::min(n, free_[node]);
    take_at(node, x);
    out.push_back({node, x});
    n -= x;
  }
  return out;
}

std::vector<std::pair<int, int>> FreeGpus::take(int n, const std::vector<std::string>& types) {
  if (n <= 0 || free_of(types) < n) return {};
  if (types.size() == 1) {
    int t = type_index(types[0]);
    return t < 0 ? std::vector<std::pair<int, int>>{} : take_among(n, layout_->nodes_of_type[t]);
  }
  std::vector<char> allowed(layout_->types.size(), types.empty() ? 1 : 0);
  for (const std::string& type : types) {
    int t = type_index(type);
    if (t >= 0) allowed[t] = 1;
  }
  std::vector<int> candidates;
  for (int i = 0; i < nodes(); ++i)
    if (allowed[layout_->type_of[i]]) candidates.push_back(i);
  return take_among(n, candidates);
}

std::map<std::string, int> FreeGpus::place(int n, const std::vector<std::string>& types) {
  std::map<std::string, int> out;
  for (const auto& [node, g] : take(n, types)) out[node_name(node)] += g;
  return out;
}

}  // namespace ringsched
