// SPDX-License-Identifier: GPL-2.0-or-later
// The free-GPU allocator (policy/free_gpus.cpp) that the planner, the placement and ringsim's
// baselines share: the smallest node that holds all of a request, else the nodes with the most
// free GPUs first, ending on the smallest node that holds what is left; free GPUs counted from
// Node::usable(); types filtered; nothing taken when a request does not fit; copies independent.
#include <cppunit/extensions/HelperMacros.h>

#include <random>
#include <tuple>

#include "ringsched/free_gpus.h"
#include "test_util.h"

using namespace ringsched;

namespace {

// Nodes as (name, type, GPUs, usable GPUs or -1 for all).
Cluster cluster(std::initializer_list<std::tuple<const char*, const char*, int, int>> nodes) {
  Cluster c;
  for (const auto& [name, type, gpus, usable] : nodes) {
    c.nodes.emplace_back();
    c.nodes.back().name = name;
    c.nodes.back().gpu_type = type;
    c.nodes.back().gpus = gpus;
    c.nodes.back().free_gpus = usable;
  }
  return c;
}

using Taken = std::vector<std::pair<int, int>>;

}  // namespace

class FreeGpusTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(FreeGpusTest);
  CPPUNIT_TEST(smallest_node_that_holds_it);
  CPPUNIT_TEST(most_free_first_then_the_smallest_that_holds_the_rest);
  CPPUNIT_TEST(counts_usable_gpus);
  CPPUNIT_TEST(types_and_names);
  CPPUNIT_TEST(nothing_taken_when_it_does_not_fit);
  CPPUNIT_TEST(copies_are_independent);
  CPPUNIT_TEST(a_layout_is_reused_only_for_the_same_nodes);
  CPPUNIT_TEST(take_of_type_follows_the_rule_of_take_among);
  CPPUNIT_TEST(most_on_one_node_follows_what_is_taken);
  CPPUNIT_TEST_SUITE_END();

 public:
  // The largest free count on one node of the given types, as GPUs are taken and given back;
  // by the index (nodes up to 256 GPUs) and by a walk (a 300-GPU node) alike.
  void most_on_one_node_follows_what_is_taken() {
    Cluster c = cluster({{"a", "v100", 8, 6}, {"b", "v100", 4, -1}, {"c", "t4", 4, -1},
                         {"d", "t4", 2, -1}, {"e", "big", 300, 10}});
    FreeGpus f(c);
    CPPUNIT_ASSERT_EQUAL(6, f.most_on_one_node({"v100"}));
    CPPUNIT_ASSERT_EQUAL(4, f.most_on_one_node({"t4"}));
    CPPUNIT_ASSERT_EQUAL(6, f.most_on_one_node({"t4", "v100"}));
    CPPUNIT_ASSERT_EQUAL(10, f.most_on_one_node({}));
    CPPUNIT_ASSERT_EQUAL(0, f.most_on_one_node({"k80"}));
    f.take_at(0, 3);  // a: 3 left, b: 4
    CPPUNIT_ASSERT_EQUAL(4, f.most_on_one_node({"v100"}));
    f.take_at(1, 4);
    f.take_at(2, 4);
    f.take_at(3, 2);
    CPPUNIT_ASSERT_EQUAL(3, f.most_on_one_node({"v100", "t4"}));
    CPPUNIT_ASSERT_EQUAL(0, f.most_on_one_node({"t4"}));
    f.take_at(4, 9);
    CPPUNIT_ASSERT_EQUAL(1, f.most_on_one_node({"big"}));
    f.take_at(4, -50);  // given back
    CPPUNIT_ASSERT_EQUAL(51, f.most_on_one_node({}));
    f.take_at(3, -2);
    CPPUNIT_ASSERT_EQUAL(2, f.most_on_one_node({"t4"}));
  }

  void smallest_node_that_holds_it() {
    Cluster c = cluster(
        {{"a", "v100", 8, -1}, {"b", "v100", 4, -1}, {"c", "v100", 6, -1}, {"d", "v100", 4, -1}});
    FreeGpus f(c);
    CPPUNIT_ASSERT(f.take(4, {"v100"}) == Taken({{1, 4}}));  // b: the first of the two 4s
    CPPUNIT_ASSERT(f.take(4, {}) == Taken({{3, 4}}));        // d
    CPPUNIT_ASSERT(f.take(5, {}) == Taken({{2, 5}}));        // c (6) before a (8)
    CPPUNIT_ASSERT(f.take(1, {}) == Taken({{2, 1}}));        // c's last GPU
    CPPUNIT_ASSERT_EQUAL(8, f.free(0));
    CPPUNIT_ASSERT_EQUAL(0, f.free(2));
    CPPUNIT_ASSERT_EQUAL(8, f.free_of({}));
  }

  void most_free_first_then_the_smallest_that_holds_the_rest() {
    Cluster c = cluster(
        {{"a", "p100", 4, -1}, {"b", "p100", 2, -1}, {"c", "p100", 4, -1}, {"d", "p100", 3, -1}});
    FreeGpus f(c);
    // 9: no node holds it; a (4, first of the two 4s) whole, then 5 left: c whole, then 1 left:
    // the smallest node that holds it, b (2), not d (3).
    CPPUNIT_ASSERT(f.take(9, {}) == Taken({{0, 4}, {2, 4}, {1, 1}}));
    CPPUNIT_ASSERT_EQUAL(1, f.free(1));
    CPPUNIT_ASSERT_EQUAL(3, f.free(3));
    // 3 left to take of 4 free: d holds them all.
    CPPUNIT_ASSERT(f.take(3, {}) == Taken({{3, 3}}));
    // Given back, a node counts again.
    f.take_at(0, -4);
    CPPUNIT_ASSERT(f.take(2, {"p100"}) == Taken({{0, 2}}));
  }

  void counts_usable_gpus() {
    Cluster c = cluster({{"a", "v100", 8, 3}, {"b", "v100", 4, 0}, {"c", "k80", 4, -1}});
    FreeGpus f(c);
    CPPUNIT_ASSERT_EQUAL(3, f.free(0));
    CPPUNIT_ASSERT_EQUAL(0, f.free(1));
    CPPUNIT_ASSERT_EQUAL(3, f.free_of_type("v100"));
    CPPUNIT_ASSERT_EQUAL(7, f.free_of({}));
    CPPUNIT_ASSERT(f.take(4, {"v100"}).empty());  // 8 GPUs on a, but only 3 usable
    CPPUNIT_ASSERT(f.take(3, {"v100"}) == Taken({{0, 3}}));
  }

  void types_and_names() {
    Cluster c = cluster(
        {{"k0", "k80", 4, -1}, {"v0", "v100", 2, -1}, {"p0", "p100", 4, -1}, {"v1", "v100", 4, -1}});
    FreeGpus f(c);
    CPPUNIT_ASSERT_EQUAL(6, f.free_of_type("v100"));
    CPPUNIT_ASSERT_EQUAL(0, f.free_of_type("a100"));
    CPPUNIT_ASSERT_EQUAL(10, f.free_of({"v100", "k80"}));
    CPPUNIT_ASSERT_EQUAL(3, f.node_index("v1"));
    CPPUNIT_ASSERT_EQUAL(-1, f.node_index("nowhere"));
    CPPUNIT_ASSERT_EQUAL(std::string("p100"), f.node_type(2));
    // Two types: the smallest node of either that holds 2 is v0.
    std::map<std::string, int> got = f.place(2, {"k80", "v100"});
    CPPUNIT_ASSERT(got == (std::map<std::string, int>{{"v0", 2}}));
    // Any type: 12 left over k0 (4), p0 (4), v1 (4): all three.
    CPPUNIT_ASSERT_EQUAL(12, f.free_of({}));
    f.take(std::map<std::string, int>{{"k0", 1}, {"elsewhere", 5}});  // unknown names ignored
    CPPUNIT_ASSERT_EQUAL(3, f.free(0));
    CPPUNIT_ASSERT(f.take(1, {"a100"}).empty());
  }

  // FreeGpus keeps the last layout it built (names, types, sizes) for the next cluster of the
  // same nodes: free counts, a node's type or size, names and node order must all be re-read.
  void a_layout_is_reused_only_for_the_same_nodes() {
    FreeGpus first(cluster({{"a", "v100", 4, -1}, {"b", "v100", 8, -1}}));
    CPPUNIT_ASSERT_EQUAL(12, first.free_of_type("v100"));
    FreeGpus busier(cluster({{"a", "v100", 4, 1}, {"b", "v100", 8, 2}}));  // same nodes, fewer free
    CPPUNIT_ASSERT_EQUAL(3, busier.free_of_type("v100"));
    CPPUNIT_ASSERT(busier.take(2, {"v100"}) == (Taken{{1, 2}}));
    FreeGpus retyped(cluster({{"a", "k80", 4, -1}, {"b", "v100", 8, -1}}));
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), retyped.node_type(0));
    CPPUNIT_ASSERT_EQUAL(8, retyped.free_of_type("v100"));
    FreeGpus resized(cluster({{"a", "k80", 16, -1}, {"b", "v100", 8, -1}}));
    CPPUNIT_ASSERT(resized.take(16, {"k80"}) == (Taken{{0, 16}}));
    FreeGpus swapped(cluster({{"b", "v100", 8, -1}, {"a", "k80", 16, -1}}));
    CPPUNIT_ASSERT_EQUAL(0, swapped.node_index("b"));
    CPPUNIT_ASSERT_EQUAL(std::string("a"), swapped.node_name(1));
    // The first still holds its own layout.
    CPPUNIT_ASSERT_EQUAL(std::string("v100"), first.node_type(0));
    CPPUNIT_ASSERT(first.take(12, {"v100"}).size() == 2);
  }

  void nothing_taken_when_it_does_not_fit() {
    Cluster c = cluster({{"a", "v100", 4, -1}, {"b", "v100", 4, -1}});
    FreeGpus f(c);
    CPPUNIT_ASSERT(f.take(9, {}).empty());
    CPPUNIT_ASSERT(f.take(0, {}).empty());
    CPPUNIT_ASSERT(f.take(-2, {}).empty());
    CPPUNIT_ASSERT(f.place(9, {"v100"}).empty());
    CPPUNIT_ASSERT_EQUAL(8, f.free_of({}));
  }

  void copies_are_independent() {
    Cluster c = cluster({{"a", "v100", 4, -1}, {"b", "v100", 4, -1}});
    FreeGpus f(c);
    FreeGpus trial = f;
    CPPUNIT_ASSERT(trial.take(6, {}) == Taken({{0, 4}, {1, 2}}));
    CPPUNIT_ASSERT_EQUAL(2, trial.free_of({}));
    CPPUNIT_ASSERT_EQUAL(8, f.free_of({}));
    CPPUNIT_ASSERT_EQUAL(std::string("b"), trial.node_name(1));
  }

  // take_of_type() (an index by free count, what the planner and the packing use) against
  // take_among() over the type's nodes (the rule written out, which sorts the nodes): the same
  // (node, GPUs) pairs on random clusters of nodes of 1-8 GPUs, some partly used, some given
  // back, one type given back past its largest node (it leaves the index), every request size.
  void take_of_type_follows_the_rule_of_take_among() {
    std::mt19937 rng(7);
    for (int round = 0; round < 40; ++round) {
      Cluster c;
      int nodes = 1 + static_cast<int>(rng() % 300);
      for (int i = 0; i < nodes; ++i) {
        Node n;
        n.name = "n" + std::to_string(i);
        n.gpu_type = rng() % 3 == 0 ? "k80" : "v100";
        static const int kSizes[] = {1, 2, 4, 8, 8, 4};
        n.gpus = kSizes[rng() % 6];
        n.free_gpus = rng() % 4 == 0 ? static_cast<int>(rng() % (n.gpus + 1)) : -1;
        c.nodes.push_back(n);
      }
      FreeGpus indexed(c), sorted(c);
      int v100 = indexed.type_index("v100");
      std::vector<int> of_type;
      for (int i = 0; i < nodes; ++i)
        if (c.nodes[i].gpu_type == "v100") of_type.push_back(i);
      for (int step = 0; step < 200; ++step) {
        if (step == 150 && round % 4 == 0 && !of_type.empty()) {
          indexed.take_at(of_type[0], -20);  // more than any node holds
          sorted.take_at(of_type[0], -20);
        }
        if (rng() % 5 == 0 && !of_type.empty()) {  // give some back
          int node = of_type[rng() % of_type.size()];
          int back = std::min(c.nodes[node].usable() - indexed.free(node), 1 + int(rng() % 4));
          indexed.take_at(node, -back);
          sorted.take_at(node, -back);
          continue;
        }
        int n = 1 + static_cast<int>(rng() % 40);
        Taken a = indexed.take_of_type(n, v100), b = sorted.take_among(n, of_type);
        CPPUNIT_ASSERT(a == b);
        CPPUNIT_ASSERT_EQUAL(sorted.free_of_type("v100"), indexed.free_of_type("v100"));
      }
      for (int i = 0; i < nodes; ++i) CPPUNIT_ASSERT_EQUAL(sorted.free(i), indexed.free(i));
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(FreeGpusTest);
