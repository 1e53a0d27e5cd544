// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to the planner (planner.cpp), combined only: a job whose ring the plan leaves spread
// over several nodes of one GPU type is gathered where that pays -- onto GPUs nobody got this
// round (step 2b), or onto one of its nodes by moving whole small jobs from there to the GPUs it
// leaves on its other nodes (step 2d); a job run on one node below its size grows there the same
// way, or on another node whose jobs move off, lent GPUs recalled (step 2e).
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "planner_steps.h"

namespace ringsched {
namespace planner_detail {

// What both steps read and change: the pass's plan so far and its free GPUs. `frozen[i]`: job i
// runs on, kept on the GPUs it holds (a move is a restart it would not otherwise have);
// `moved[i]`: set for such a job when a step moves it.
struct GatherPass {
  const Cluster& cluster;
  const ThroughputModel& model;
  const NodeIndex& nodes;
  const Snapshot& snap;
  const std::vector<JobView>& views;
  const ResizeCosts& costs;
  const std::vector<bool>& frozen;
  const std::function<bool(int)>& movable;  // may be restarted on other GPUs
  FreeGpus& free;
  Plan& plan;
  std::vector<bool>& moved;
  bool power_of_two = true;  // PlannerConfig::power_of_two: ring sizes a recall may shrink to
};

// 2b. A kept job spread over more nodes than it needs (grown while only scattered GPUs were
// free) moves onto fewer where the GPUs nobody got this round hold it, if its faster ring gains
// more than min_gain_multiple restarts, and not within min_interval_s of its last resize.
void gather_onto_free_gpus(GatherPass& g);

// 2d. A job still spread over nodes of one type, fitting in one of them, takes that node whole
// where the other jobs there (each whole on it) fit on the GPUs it leaves on its other nodes
// (and those free there): they move, it gathers. Done where its faster ring gains more than the
// restarts it costs -- one per moved running job that would otherwise keep its GPUs, one for the
// job itself if it would -- plus min_gain_multiple restarts, the gain counted only until the last
// of those running jobs would end (the node comes free then without a move); no kept job within
// min_interval_s of its last resize, none that may not move -- except, for a waiting job that
// starts this round, a lender past the grace that gives back lent GPUs to move (it moves at a
// smaller size, down to its request). Jobs in `order` first.
void gather_by_swaps(GatherPass& g, const std::vector<int>& order);

// 2e. A job the plan runs on one node below its whole size (`whole`: job -> size; the fairness
// floor that the GPUs one node had free capped) grows to it there where the other jobs on that
// node (each whole on it) fit on other nodes' free GPUs of its type: they move, it grows. Else
// the recall: it grows on the node of its type where that pays most, the jobs there moved to
// other nodes' free GPUs and to those it leaves, a job holding GPUs above its request (lent) at
// fewer, down to its request, where the room holds it no other way. Done where its faster ring
// gains more than the restarts it costs (one per moved job that would otherwise keep its GPUs,
// one for the job itself if it would) plus min_gain_multiple restarts, with 2d's limits on what
// moves; the lent GPUs a recall takes back are not charged (they come back to a job short of
// its fair share). Jobs in `order` first.
void grow_whole_by_swaps(GatherPass& g, const std::vector<int>& order,
                         const std::map<int, int>& whole);

}  // namespace planner_detail
}  // namespace ringsched
