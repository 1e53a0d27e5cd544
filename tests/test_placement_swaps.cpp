// SPDX-License-Identifier: GPL-2.0-or-later
// Two running jobs that the placement gave each other's GPUs per type, though the count step
// counted them alike (or, of one model, the exchange takes them no closer to their counts), keep
// their own (policy/planner_hooks.h, undo_placement_swaps()): the swap only moves the larger
// share to whichever job has more work left, and that flips back.
#include <cppunit/extensions/HelperMacros.h>

#include <map>
#include <string>
#include <vector>

#include "planner_fixtures.h"
#include "planner_hooks.h"
#include "test_util.h"

using namespace ringsched;
using namespace planner_fixtures;

namespace {

// Two 8-GPU K80 nodes and one 8-GPU P100 node; jobs a (8 K80s on k80-1) and b (4 K80s on
// k80-2) run; the placement's result `planned` gives a and b the allocations in that order.
struct Swap {
  PlacementProblem pp;
  PlacementResult pr;
  std::vector<std::map<std::string, int>> now = {{{"k80", 8}}, {{"k80", 4}}};  // GPUs per type held
  Swap(const std::map<std::string, int>& planned_a, const std::map<std::string, int>& planned_b) {
    for (const char* name : {"k80-1", "k80-2"}) pp.cluster.nodes.push_back(Node{name, "k80", 8});
    pp.cluster.nodes.push_back(Node{"p100-1", "p100", 8});
    for (const auto& current : {std::map<std::string, int>{{"k80-1", 8}}, std::map<std::string, int>{{"k80-2", 4}}}) {
      PlacementJob j;
      j.model = "transformer-b16";
      j.remaining = 1e7;
      j.min_gpus = 1;
      j.max_gpus = 8;
      j.running = true;
      j.current = current;
      pp.jobs.push_back(j);
    }
    for (const auto& planned : {planned_a, planned_b}) {
      JobPlacement p;
      p.gpus_by_node = planned;
      for (const auto& [node, g] : planned) {
        p.gpus_by_type[node.substr(0, node.find('-'))] += g;
        p.total += g;
      }
      pr.jobs.push_back(p);
    }
  }
};

}  // namespace

class PlacementSwapsTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlacementSwapsTest);
  CPPUNIT_TEST(a_swap_of_jobs_counted_alike_is_undone);
  CPPUNIT_TEST(other_moves_stand);
  CPPUNIT_TEST_SUITE_END();

 public:
  void a_swap_of_jobs_counted_alike_is_undone() {
    // The placement put b on a's 8 K80s and a on 4 of b's node: exchanged, both stay in place.
    Swap s({{"k80-2", 4}}, {{"k80-1", 8}});
    CPPUNIT_ASSERT_EQUAL(1, undo_placement_swaps(s.pp, {2, 2}, s.now, s.pr));
    CPPUNIT_ASSERT((s.pr.jobs[0].gpus_by_node == std::map<std::string, int>{{"k80-1", 8}}));
    CPPUNIT_ASSERT((s.pr.jobs[1].gpus_by_node == std::map<std::string, int>{{"k80-2", 4}}));
    CPPUNIT_ASSERT_EQUAL(8, s.pr.jobs[0].total);
    CPPUNIT_ASSERT_EQUAL(4, s.pr.jobs[1].gpus_by_type.at("k80"));
    // Counted apart, a at its 8 and b to shrink to 2, but of one model: the exchange takes both
    // further from their counts (a to 4, b to 8), so it is undone too.
    Swap apart({{"k80-2", 4}}, {{"k80-1", 8}});
    CPPUNIT_ASSERT_EQUAL(1, undo_placement_swaps(apart.pp, {8, 2}, apart.now, apart.pr));
    CPPUNIT_ASSERT_EQUAL(8, apart.pr.jobs[0].total);
    CPPUNIT_ASSERT_EQUAL(4, apart.pr.jobs[1].total);
  }

  void other_moves_stand() {
    // The count step counted them differently (b is to grow): its decision, not a swap.
    Swap counted({{"k80-2", 4}}, {{"k80-1", 8}});
    CPPUNIT_ASSERT_EQUAL(0, undo_placement_swaps(counted.pp, {4, 8}, counted.now, counted.pr));
    CPPUNIT_ASSERT_EQUAL(8, counted.pr.jobs[1].total);
    // Counted apart as above, but of two models: their speeds on the two shapes differ, and the
    // placement's exchange stands.
    Swap models({{"k80-2", 4}}, {{"k80-1", 8}});
    models.pp.jobs[1].model = "resnet50-b64";
    CPPUNIT_ASSERT_EQUAL(0, undo_placement_swaps(models.pp, {8, 2}, models.now, models.pr));
    CPPUNIT_ASSERT_EQUAL(8, models.pr.jobs[1].total);
    // a may no longer run on K80s (its allowed types narrowed to P100s): it cannot take back its
    // K80s, and nothing is exchanged.
    Swap narrowed({{"k80-2", 4}}, {{"k80-1", 8}});
    narrowed.pp.jobs[0].allowed_types = {"p100"};
    CPPUNIT_ASSERT_EQUAL(0, undo_placement_swaps(narrowed.pp, {2, 2}, narrowed.now, narrowed.pr));
    CPPUNIT_ASSERT_EQUAL(4, narrowed.pr.jobs[0].total);
    // Not mirror images (a to 4 P100s, b to 8 K80s): both moves stand.
    Swap moved({{"p100-1", 4}}, {{"k80-1", 8}});
    CPPUNIT_ASSERT_EQUAL(0, undo_placement_swaps(moved.pp, {2, 2}, moved.now, moved.pr));
    CPPUNIT_ASSERT_EQUAL(4, moved.pr.jobs[0].gpus_by_type.at("p100"));
    // a's maximum lowered to 4: it may not take its 8 back.
    Swap capped({{"k80-2", 4}}, {{"k80-1", 8}});
    capped.pp.jobs[0].max_gpus = 4;
    CPPUNIT_ASSERT_EQUAL(0, undo_placement_swaps(capped.pp, {2, 2}, capped.now, capped.pr));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlacementSwapsTest);
