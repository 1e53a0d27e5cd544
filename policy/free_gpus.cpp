// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/free_gpus.h"

#include <algorithm>

namespace ringsched {
namespace {

// Types whose nodes hold more GPUs than this are not indexed (a set per count would cost more
// than looking at every node).
constexpr int kMostIndexed = 256;

}  // namespace

std::shared_ptr<const FreeGpus::Layout> FreeGpus::layout_of(const Cluster& cluster) {
  thread_local std::shared_ptr<const Layout> last;
  if (last && last->names.size() == cluster.nodes.size()) {
    bool same = true;
    for (size_t i = 0; i < cluster.nodes.size() && same; ++i) {
      const Node& n = cluster.nodes[i];
      same = last->gpus[i] == n.gpus && last->names[i] == n.name &&
             last->types[last->type_of[i]] == n.gpu_type;
    }
    if (same) return last;
  }
  auto layout = std::make_shared<Layout>();
  layout->types = cluster.types();
  layout->nodes_of_type.assign(layout->types.size(), {});
  layout->by_name.reserve(cluster.nodes.size());
  size_t T = layout->types.size(), sets = 0, counts = 0;
  layout->most.assign(T, 0);
  for (const Node& n : cluster.nodes) {
    int node = static_cast<int>(layout->names.size());
    int t = static_cast<int>(std::lower_bound(layout->types.begin(), layout->types.end(),
                                              n.gpu_type) - layout->types.begin());
    layout->names.push_back(n.name);
    layout->gpus.push_back(n.gpus);
    layout->type_of.push_back(t);
    layout->place_in_type.push_back(static_cast<int>(layout->nodes_of_type[t].size()));
    layout->nodes_of_type[t].push_back(node);
    layout->by_name.emplace(n.name, node);
    layout->most[t] = std::max(layout->most[t], n.gpus);
  }
  layout->words.assign(T, 0);
  layout->set_start.assign(T, 0);
  layout->count_start.assign(T, 0);
  for (size_t t = 0; t < T; ++t) {
    if (layout->most[t] > kMostIndexed) continue;
    layout->words[t] = static_cast<int>((layout->nodes_of_type[t].size() + 63) / 64);
    layout->set_start[t] = sets;
    layout->count_start[t] = counts;
    sets += static_cast<size_t>(layout->most[t]) * layout->words[t];
    counts += layout->most[t];
  }
  layout->sets = sets;
  layout->counts = counts;
  last = layout;
  return layout;
}

FreeGpus::FreeGpus(const Cluster& cluster) : layout_(layout_of(cluster)) {
  const Layout& l = *layout_;
  const size_t T = l.types.size();
  free_of_type_.assign(T, 0);
  free_.reserve(cluster.nodes.size());
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    free_.push_back(cluster.nodes[i].usable());
    free_of_type_[l.type_of[i]] += free_.back();
  }
  indexed_.assign(T, 0);
  for (size_t t = 0; t < T; ++t) indexed_[t] = l.most[t] <= kMostIndexed;
  node_sets_.assign(l.sets, 0);
  set_size_.assign(l.counts, 0);
  for (int node = 0; node < nodes(); ++node) index_move(node, 0, free_[node]);
}

void FreeGpus::index_move(int node, int from, int to) {
  const Layout& l = *layout_;
  int t = l.type_of[node];
  if (!indexed_[t] || from == to) return;
  if (to > l.most[t]) {
    indexed_[t] = 0;
    return;
  }
  size_t word = static_cast<size_t>(l.place_in_type[node]) / 64;
  uint64_t bit = uint64_t{1} << (l.place_in_type[node] % 64);
  if (from > 0) {
    node_sets_[l.set_start[t] + static_cast<size_t>(from - 1) * l.words[t] + word] &= ~bit;
    --set_size_[l.count_start[t] + from - 1];
  }
  if (to > 0) {
    node_sets_[l.set_start[t] + static_cast<size_t>(to - 1) * l.words[t] + word] |= bit;
    ++set_size_[l.count_start[t] + to - 1];
  }
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

int FreeGpus::most_on_one_node(const std::vector<std::string>& types) const {
  const Layout& l = *layout_;
  auto most_of_type = [&](int t) {
    if (indexed_[t]) {
      const int* size = set_size_.data() + l.count_start[t];
      for (int v = l.most[t]; v > 0; --v)
        if (size[v - 1] > 0) return v;
      return 0;
    }
    int most = 0;
    for (int node : l.nodes_of_type[t]) most = std::max(most, free_[node]);
    return most;
  };
  int most = 0;
  if (types.empty()) {
    for (size_t t = 0; t < l.types.size(); ++t)
      most = std::max(most, most_of_type(static_cast<int>(t)));
  } else {
    for (const std::string& type : types) {
      int t = type_index(type);
      if (t >= 0) most = std::max(most, most_of_type(t));
    }
  }
  return most;
}

void FreeGpus::take_at(int node, int n) {
  index_move(node, free_[node], free_[node] - n);
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

std::vector<std::pair<int, int>> FreeGpus::take_of_type(int n, int t) {
  std::vector<std::pair<int, int>> out;
  if (n <= 0) return out;
  if (!indexed_[t]) return take_among(n, layout_->nodes_of_type[t]);
  const Layout& l = *layout_;
  const int most = l.most[t], words = l.words[t];
  const int* size = set_size_.data() + l.count_start[t];  // size[v - 1]: nodes with v free
  long total = 0;
  for (int v = 1; v <= most; ++v) total += static_cast<long>(v) * size[v - 1];
  if (total < n) return out;
  // The first node (in the cluster's order) of those with v free.
  auto first_with = [&](int v) {
    const uint64_t* set = node_sets_.data() + l.set_start[t] + static_cast<size_t>(v - 1) * words;
    int w = 0;
    while (set[w] == 0) ++w;
    return l.nodes_of_type[t][static_cast<size_t>(w) * 64 + __builtin_ctzll(set[w])];
  };
  // take_among()'s steps: the smallest node that holds all that is left (the first listed
  // among equals), else the node with the most free GPUs (the first listed), whole.
  while (n > 0) {
    int fit = 0;
    for (int v = n; v <= most && !fit; ++v)
      if (size[v - 1] > 0) fit = v;
    int v = fit;
    if (!fit) {
      v = std::min(n - 1, most);
      while (size[v - 1] == 0) --v;
    }
    int node = first_with(v);
    int x = std::min(n, v);
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
    return t < 0 ? std::vector<std::pair<int, int>>{} : take_of_type(n, t);
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
