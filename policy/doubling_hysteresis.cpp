// SPDX-License-Identifier: GPL-2.0-or-later
// Step 3 of the doubling round, hysteresis: which running jobs keep their size, and the planning
// cost that values a plan with a job held (see doubling_round.h).
#include "doubling_round.h"

#include <algorithm>
#include <queue>

namespace ringsched {
namespace doubling_internal {

// Sum of costs of the jobs that run plus, for waiting jobs, an estimate of when they could
// start (the planned jobs' finish times free GPUs) and their run at base size. Only used to
// compare plans of the same round.
double DoublingRound::planning_cost(const Assignment& a) const {
  return planning_cost(a, [&](size_t j) { return a.gpus[j]; }, a.free,
                       [&](size_t j) { return a.wait_why[j] == WaitWhy::NoRoom; });
}

// The same for sizes given by size_of(j), `free` GPUs left, and waits_for_room(j) telling
// whether a job with size 0 waits for room. O(n log n): finish times sorted once, then a
// binary search over the GPUs they free per waiting job.
template <typename SizeOf, typename WaitsForRoom>
double DoublingRound::planning_cost(const Assignment& a, SizeOf size_of, int free,
                                    WaitsForRoom waits_for_room) const {
  std::vector<std::pair<double, int>>& finishes = finishes_;  // finish time, GPUs freed
  finishes.clear();
  for (size_t j = 0; j < a.gpus.size(); ++j) {
    int g = size_of(j);
    if (g > 0) finishes.emplace_back(cost(j, g), g);
  }
  std::sort(finishes.begin(), finishes.end());
  return planning_cost(a, size_of, free, waits_for_room, finishes);
}

// The same with `finishes` given: the (cost, GPUs) of every job that runs, sorted.
template <typename SizeOf, typename WaitsForRoom>
double DoublingRound::planning_cost(const Assignment& a, SizeOf size_of, int free,
                                    WaitsForRoom waits_for_room,
                                    const std::vector<std::pair<double, int>>& finishes) const {
  size_t n = a.gpus.size();
  double total = 0;
  for (size_t j = 0; j < n; ++j) {
    int g = size_of(j);
    if (g > 0) total += cost(j, g);
  }
  std::vector<long>& freed = freed_;  // GPUs free once the first k+1 have finished
  freed.resize(finishes.size());
  long sum = free;
  for (size_t k = 0; k < finishes.size(); ++k) freed[k] = sum += finishes[k].second;
  for (size_t j = 0; j < n; ++j) {
    if (size_of(j) > 0 || !waits_for_room(j)) continue;
    int need = base_[j];
    double start = 0;
    if (free < need && !finishes.empty()) {
      size_t k = std::lower_bound(freed.begin(), freed.end(), static_cast<long>(need)) -
                 freed.begin();
      start = finishes[std::min(k, finishes.size() - 1)].first;
    }
    total += start + wait_run_[j];
  }
  return total;
}

// `sorted` (the finishes of plan a, sorted) with the jobs of `sizes` (job, new size) changed:
// their old entries out, their new ones in, into `out`. O(n + k log k) for k changes, where
// sorting every finish again costs O(n log n) per held job (a third of a 2,000-job burst's CPU).
// Equal entries are the same values, so the result is what sorting would give, bit for bit.
void DoublingRound::merge_finishes(const std::vector<std::pair<double, int>>& sorted,
                                   const Assignment& a, const std::vector<std::pair<int, int>>& sizes,
                                   std::vector<std::pair<double, int>>& out) const {
  std::vector<std::pair<double, int>> gone, added;
  for (const auto& [k, size] : sizes) {
    if (a.gpus[k] > 0) gone.emplace_back(cost(k, a.gpus[k]), a.gpus[k]);
    if (size > 0) added.emplace_back(cost(k, size), size);
  }
  std::sort(gone.begin(), gone.end());
  std::sort(added.begin(), added.end());
  out.clear();
  out.reserve(sorted.size() + added.size());
  size_t g = 0, d = 0;
  for (const auto& f : sorted) {
    while (g < gone.size() && gone[g] < f) ++g;  // not in the list: cannot happen, skipped
    if (g < gone.size() && gone[g] == f) {
      ++g;
      continue;
    }
    while (d < added.size() && added[d] < f) out.push_back(added[d++]);
    out.push_back(f);
  }
  while (d < added.size()) out.push_back(added[d++]);
}

// Step 3's first rule before the gain rule is weighed: every running job within the minimum
// interval keeps its size. Pinned only once the plan resized it, such a job was free GPUs to the
// repair or re-plan that valued a gain hold: a hold whose repaired plan stopped a job that had
// just started passed as costing no one, the next sweep pinned that job back, and the shortage
// fell on a starving 1-GPU job, the only one left unpinned (it waited 181 s for 283 s of work,
// max finish-time fairness 1.36x Tiresias's; docs/combined-fairness.md). `kept_anyway`: those
// the plan did not resize (their reasons are those of an unpinned job at its size).
Assignment DoublingRound::plan_with_interval_pins(std::vector<char>& pinned,
                                                  std::vector<char>& pinned_for_interval,
                                                  std::vector<char>& kept_anyway) const {
  Assignment plan = plan_round(pinned);
  bool any = false;
  for (size_t j = 0; j < curves_.size(); ++j) {
    const DoublingJob& job = curves_.job(j);
    if (!job.running || pinned[j] || !curves_.current_is_valid(j) || !too_soon(j) ||
        job.interval_yields || job.interval_grows)
      continue;
    pinned[j] = 1;
    pinned_for_interval[j] = plan.gpus[j] != job.current_gpus;
    kept_anyway[j] = !pinned_for_interval[j];
    any = true;
  }
  return any ? plan_round(pinned) : plan;
}

std::vector<char> DoublingRound::described_pins(const std::vector<char>& pinned,
                                                const std::vector<char>& kept_anyway) {
  std::vector<char> out = pinned;
  for (size_t j = 0; j < out.size(); ++j)
    if (kept_anyway[j]) out[j] = 0;
  return out;
}

// Step 3 with a full re-plan per running job the plan resizes, and one pin per pass: at most
// n passes of n re-plans. The reference for small rounds (DoublingSteps).
DoublingResult DoublingRound::run_exact() {
  size_t n = curves_.size();
  std::vector<char> pinned(n, 0);
  std::vector<double> resize_gain(n, kInf);  // measured gain of each running job's resize
  std::vector<char> pinned_for_interval(n, 0);
  std::vector<char> kept_anyway(n, 0);
  Assignment plan = plan_with_interval_pins(pinned, pinned_for_interval, kept_anyway);
  const std::vector<int> first_gpus = plan.gpus;  // release_lender()'s first plan
  std::vector<char> released(n, 0);  // lenders let go (release_lender()), not held again
  // Step 3: pin the worst violator, re-plan, until no running job is resized against the rules.
  // Each job is pinned at most once and released at most once: at most 2n passes.
  for (size_t pass = 0; pass <= 2 * n; ++pass) {
    int worst = -1;
    bool worst_interval = false;
    double worst_gain = kInf;
    double base_cost = planning_cost(plan);
    for (size_t j = 0; j < n; ++j) {
      const DoublingJob& job = curves_.job(j);
      if (!job.running || pinned[j] || released[j] || !curves_.current_is_valid(j)) continue;
      if (plan.gpus[j] == job.current_gpus) continue;
      std::vector<char> held = pinned;
      held[j] = 1;
      Assignment alt = plan_round(held);
      // Gross gain: what holding the job would cost the plan, before this job's restart.
      double gain = planning_cost(alt) - base_cost + costs_.restart_s;
      resize_gain[j] = gain;
      bool starving_waits =
          starves(plan, alt, j) || (lends_with_lead(j) && keeps_arrival_waiting(plan, alt));
      bool too_soon = interval_holds(plan, j) &&
                      !interval_yields(j, starving_waits, squeezes_within_request(plan, alt, j),
                                      starves_short(plan, alt, j));
      bool too_small = (gain < costs_.min_gain_multiple * costs_.restart_s ||
                        (shrinks_into_late(j, plan.gpus[j]) &&
                         !fair_hold_yields(plan, alt, j))) &&
                       !fair_grow(plan, j) && !starving_waits;
      if (!too_soon && !too_small) continue;
      // Interval violations first, then the smallest gain; ties by policy order.
      if (worst < 0 || (too_soon && !worst_interval) ||
          (too_soon == worst_interval &&
           (gain < worst_gain || (gain == worst_gain && rank_[j] > rank_[worst])))) {
        worst = static_cast<int>(j);
        worst_interval = too_soon;
        worst_gain = gain;
      }
    }
    if (worst < 0) {
      if (!release_lender(plan, first_gpus, pinned, pinned_for_interval, kept_anyway, resize_gain,
                          released))
        break;
      plan = plan_round(pinned);
      continue;
    }
    pinned[worst] = 1;
    pinned_for_interval[worst] = worst_interval;
    plan = plan_round(pinned);
  }
  return describe(plan, described_pins(pinned, kept_anyway), pinned_for_interval, resize_gain,
                  released);
}

// Step 3 for large rounds. A plan with job j held at its current size differs from the plan
// only in what j's GPUs do: when j grew, the GPUs it would not take go to the next doublings
// the greedy had no room for (best TI first, or a waiting job that now fits); when j shrank,
// the GPUs it keeps come from the doublings that save least per GPU (undone, smallest TI
// first), then from the lowest-priority jobs, which wait. hold() builds that repaired plan from
// an index of those marginal doublings in O(moves x log n) plus one cost evaluation, instead
// of a full re-plan. A sweep estimates every resized running job, visits them worst first
// (interval violations, then the smallest gain; ties: lowest priority first) and pins each
// one that still violates a rule on the plan as repaired by the pins before it -- so two jobs
// that could each make room are not both held. Then one full re-plan with all the pins, and
// another sweep, until a sweep pins nothing.
DoublingResult DoublingRound::run_incremental() {
  size_t n = curves_.size();
  std::vector<char> pinned(n, 0);
  std::vector<double> resize_gain(n, kInf);
  std::vector<char> pinned_for_interval(n, 0);
  std::vector<char> kept_anyway(n, 0);
  Assignment plan = plan_with_interval_pins(pinned, pinned_for_interval, kept_anyway);
  const std::vector<int> first_gpus = plan.gpus;  // release_lender()'s first plan
  std::vector<char> released(n, 0);
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    Assignment w = plan;  // the plan as repaired by this sweep's pins
    Margins m = index_margins(w, pinned);
    double w_cost = planning_cost(w);
    working_finishes_ = finishes_;  // w's, sorted: hold() merges its changes into them
    struct Candidate {
      bool too_soon;
      double gain;
      int job;
    };
    std::vector<Candidate> candidates;
    for (size_t j = 0; j < n; ++j) {
      if (!is_resized(w, pinned, j) || released[j]) continue;
      Held h = hold(w, pinned, m, static_cast<int>(j), w_cost);
      double gain = h.cost - w_cost + costs_.restart_s;
      candidates.push_back({interval_holds(w, j), gain, static_cast<int>(j)});
    }
    std::sort(candidates.begin(), candidates.end(), [this](const Candidate& x, const Candidate& y) {
      if (x.too_soon != y.too_soon) return x.too_soon;
      if (x.gain != y.gain) return x.gain < y.gain;
      return rank_[x.job] > rank_[y.job];
    });
    bool pinned_any = false;
    for (const Candidate& c : candidates) {
      size_t j = static_cast<size_t>(c.job);
      if (!is_resized(w, pinned, j)) continue;  // an earlier pin's repair moved it back
      Held h = hold(w, pinned, m, c.job, w_cost);
      double gain = h.cost - w_cost + costs_.restart_s;
      resize_gain[j] = gain;
      bool starving_waits = starves(w, h) || (lends_with_lead(j) && keeps_arrival_waiting(w, h));
      bool soon = interval_holds(w, j) && !interval_yields(j, starving_waits, squeezes_within_request(w, h),
                                                  starves_short(w, h, j));
      bool too_small = (gain < costs_.min_gain_multiple * costs_.restart_s ||
                        (shrinks_into_late(j, w.gpus[j]) && !fair_hold_yields(w, h))) &&
                       !fair_grow(w, j) && !starving_waits;
      if (!soon && !too_small) continue;
      pinned[j] = 1;
      pinned_for_interval[j] = soon;
      pinned_any = true;
      merge_finishes(working_finishes_, w, h.sizes, held_finishes_);
      apply(h, w, m, pinned);
      working_finishes_.swap(held_finishes_);
      w_cost = h.cost;
    }
    if (!pinned_any &&
        !release_lender(plan, first_gpus, pinned, pinned_for_interval, kept_anyway, resize_gain,
                        released))
      break;
    plan = plan_round(pinned);
  }
  return describe(plan, described_pins(pinned, kept_anyway), pinned_for_interval, resize_gain,
                  released);
}

bool DoublingRound::release_lender(const Assignment& plan, const std::vector<int>& first_gpus,
                                   std::vector<char>& pinned,
                                   const std::vector<char>& pinned_for_interval,
                                   const std::vector<char>& kept_anyway,
                                   const std::vector<double>& resize_gain,
                                   std::vector<char>& released) const {
  // The sets of types on which the plan stops or shrinks a running job within its request for
  // room. Shrinks too: a job that asked for 2 GPUs, shrunk 2 -> 1 twice for plan gains while
  // jobs that asked for 1 held 2-4, was grown back 300 s later each time (four restarts; max FTF
  // 1.033x Tiresias's, phillyd v100x4 L0.5 s22).
  std::set<int> squeezed_on;
  for (size_t k = 0; k < curves_.size(); ++k) {
    const Squeeze s = loses_within_request(k, plan.gpus[k]);
    if (s == Squeeze::Shrinks ||
        (s == Squeeze::Stops && curves_.job(k).stoppable && plan.wait_why[k] == WaitWhy::NoRoom))
      squeezed_on.insert(curves_.job(k).type_set);
  }
  // A job that waits or runs below its request, which the holds leave below both that request
  // and what the first plan gave it.
  bool kept_short = false;
  for (size_t k = 0; k < curves_.size() && !kept_short; ++k) {
    const DoublingJob& d = curves_.job(k);
    kept_short = plan.gpus[k] < std::min(first_gpus[k], d.request()) &&
                 (!d.running || d.current_gpus < d.request());
  }
  if (squeezed_on.empty() && !kept_short) return false;
  int best = -1;
  for (size_t j = 0; j < curves_.size(); ++j) {
    const DoublingJob& d = curves_.job(j);
    if (!pinned[j] || pinned_for_interval[j] || kept_anyway[j] || !d.running ||
        d.fair_max_gpus <= 0 || d.current_gpus <= d.fair_max_gpus ||
        !(squeezed_on.count(d.type_set) || (kept_short && lends_with_lead(j))))
      continue;
    if (best < 0 || resize_gain[j] > resize_gain[best]) best = static_cast<int>(j);
  }
  if (best < 0) return false;
  pinned[best] = 0;
  released[best] = squeezed_on.count(curves_.job(best).type_set) ? kReleasedForSqueeze
                                                                  : kReleasedForShort;
  return true;
}

// Step 2's candidate: doubling j from `size` (same conditions as plan_round's push).
bool DoublingRound::next_doubling(size_t j, int size, bool resizable, double* ti) const {
  if (size <= 0 || !resizable) return false;
  long next = 2L * size;
  if (next > curves_.cap(j) || curves_.speed(j, static_cast<int>(next)) <= 0) return false;
  *ti = (cost(j, size) - cost(j, static_cast<int>(next))) / size;
  return *ti > 0;
}

// The doubling that brought j to `size`, if j is resizable and above its base.
bool DoublingRound::last_doubling(size_t j, int size, bool resizable, double* ti) const {
  if (!resizable || size <= curves_.base(j) || size % 2) return false;
  *ti = (cost(j, size / 2) - cost(j, size)) / (size / 2);
  return true;
}

void DoublingRound::index_job(Margins& m, size_t j, int size, bool resizable, bool add) const {
  double ti;
  if (next_doubling(j, size, resizable, &ti)) {
    Key k{-ti, rank_[j], static_cast<int>(j)};
    auto& set = m.grow[size_class(size)];
    if (add) set.insert(k); else set.erase(k);
  }
  if (last_doubling(j, size, resizable, &ti)) {
    Key k{ti, -rank_[j], static_cast<int>(j)};
    if (add) m.undo.insert(k); else m.undo.erase(k);
  }
}

DoublingRound::Margins DoublingRound::index_margins(const Assignment& a,
                                                    const std::vector<char>& pinned) const {
  Margins m;
  m.grow.resize(size_class(std::max(1, curves_.total())) + 2);
  for (size_t j = 0; j < curves_.size(); ++j) {
    if (a.gpus[j] > 0) index_job(m, j, a.gpus[j], may_resize(j, pinned), true);
    else if (a.wait_why[j] == WaitWhy::NoRoom) ++m.waiting;
  }
  return m;
}

// The plan `a` with job j held at its current size, repaired as run_incremental() describes.
DoublingRound::Held DoublingRound::hold(const Assignment& a, const std::vector<char>& pinned,
                                        const Margins& m, int j, double a_cost) const {
  Held h;
  h.job = j;
  h.free = a.free;
  h.admitted = a.admitted;
  std::vector<int> touched;
  auto size_of = [&](int k) { return scratch_[k] >= 0 ? scratch_[k] : a.gpus[k]; };
  auto set_size = [&](int k, int size) {
    if (scratch_[k] < 0) touched.push_back(k);
    scratch_[k] = size;
  };
  auto resizable = [&](int k) { return k != j && may_resize(k, pinned); };
  int now = a.gpus[j], keep = curves_.job(j).current_gpus;
  set_size(j, keep);
  h.free += now - keep;
  if (now == 0) ++h.admitted;
  // 1. Room for what j keeps: undo the doublings that save least, then stop low-priority jobs.
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> undo_more;  // re-halvings
  auto undo_it = m.undo.begin();
  while (h.free < 0) {
    while (undo_it != m.undo.end() && scratch_[std::get<2>(*undo_it)] >= 0) ++undo_it;  // stale
    bool from_set = undo_it != m.undo.end() && (undo_more.empty() || *undo_it < undo_more.top());
    if (!from_set && undo_more.empty()) break;
    int k = from_set ? std::get<2>(*undo_it) : std::get<2>(undo_more.top());
    if (from_set) ++undo_it; else undo_more.pop();
    int size = size_of(k);
    set_size(k, size / 2);
    h.free += size / 2;
    double ti;
    if (last_doubling(k, size / 2, resizable(k), &ti)) undo_more.emplace(ti, -rank_[k], k);
  }
  // Never a running job that may not be stopped (DoublingJob::stoppable: Preempt=no, a job not
  // under ringrun, the tail guard's): plan_round admits it before any waiting job. A repair that
  // stopped one valued a lender's hold as if the GPUs of a long 8-GPU job went to short ones:
  // the hold passed, and the plan kept a starving 292 s job waiting behind it instead (max
  // finish-time fairness 1.51x Tiresias's on phillyd v100x4 L0.5 s36 with the tail guard).
  bool stopped = false;
  for (size_t r = order_.size(); h.free < 0 && r-- > 0;) {
    int k = order_[r];
    if (k == j || pinned[k] || size_of(k) <= 0 ||
        (curves_.job(k).running && !curves_.job(k).stoppable))
      continue;
    h.free += size_of(k);
    set_size(k, 0);
    --h.admitted;
    stopped = true;
  }
  // 2. Use what is free: admission comes before doubling, so waiting jobs first (policy
  // order), then the greedy's next doublings that fit.
  std::vector<Key> grow_more;  // doublings of jobs this repair changed
  auto push_grow = [&](int k, int size) {
    double ti;
    if (next_doubling(k, size, resizable(k), &ti)) grow_more.emplace_back(-ti, rank_[k], k);
  };
  if (h.free > 0 && m.waiting > 0)
    for (int k : order_) {
      if (h.free <= 0) break;
      if (scratch_[k] >= 0 || pinned[k] || a.gpus[k] > 0 || a.wait_why[k] != WaitWhy::NoRoom)
        continue;
      int b = curves_.base(k);
      if (b > h.free) continue;
      set_size(k, b);
      h.free -= b;
      ++h.admitted;
    }
  // The jobs this repair changed (halved, started) have new next doublings.
  for (int k : touched)
    if (size_of(k) > 0) push_grow(k, size_of(k));
  std::vector<std::set<Key>::const_iterator> heads(m.grow.size());
  for (size_t c = 0; c < m.grow.size(); ++c) heads[c] = m.grow[c].begin();
  while (h.free > 0) {
    const Key* best = nullptr;
    int best_size = 0;
    for (size_t c = 0; c < m.grow.size() && (1 << c) <= h.free; ++c) {
      auto& it = heads[c];
      while (it != m.grow[c].end() && scratch_[std::get<2>(*it)] >= 0) ++it;  // stale
      if (it != m.grow[c].end() && (!best || *it < *best)) {
        best = &*it;
        best_size = 1 << c;
      }
    }
    size_t more = grow_more.size();
    for (size_t x = 0; x < grow_more.size(); ++x) {
      int k = std::get<2>(grow_more[x]);
      int size = size_of(k);
      if (size > h.free) continue;
      if (!best || grow_more[x] < *best) {
        best = &grow_more[x];
        best_size = size;
        more = x;
      }
    }
    if (!best) break;
    int k = std::get<2>(*best);
    if (more < grow_more.size()) {
      grow_more.erase(grow_more.begin() + more);
    } else {
      ++heads[size_class(best_size)];
    }
    if (size_of(k) != best_size) continue;  // stale overlay entry
    set_size(k, 2 * best_size);
    h.free -= best_size;
    push_grow(k, 2 * best_size);
  }
  for (int k : touched) h.sizes.emplace_back(k, scratch_[k]);
  if (m.waiting == 0 && !stopped) {
    // No job waits for room in either plan: the cost changes only by the jobs changed.
    h.cost = a_cost;
    for (int k : touched) h.cost += cost(k, scratch_[k]) - cost(k, a.gpus[k]);
  } else {
    merge_finishes(working_finishes_, a, h.sizes, held_finishes_);
    h.cost = planning_cost(a, [&](size_t k) { return size_of(static_cast<int>(k)); }, h.free,
                           [&](size_t k) {
                             return a.wait_why[k] == WaitWhy::NoRoom || a.gpus[k] > 0;
                           },
                           held_finishes_);
  }
  for (int k : touched) scratch_[k] = -1;
  return h;
}

// Makes the repaired plan the working plan: sizes, free GPUs, admissions and the index.
void DoublingRound::apply(const Held& h, Assignment& a, Margins& m,
                          const std::vector<char>& pinned) const {
  // The index keys of a job depend on whether it may be resized: unindex every changed job
  // as it was indexed (the job just held was still resizable), then index it as it is now.
  for (const auto& [k, size] : h.sizes) {
    if (a.gpus[k] > 0)
      index_job(m, k, a.gpus[k], k == h.job ? curves_.job(k).elastic : may_resize(k, pinned),
                false);
    if (a.gpus[k] == 0 && a.wait_why[k] == WaitWhy::NoRoom) --m.waiting;
    a.gpus[k] = size;
    if (size > 0) {
      a.wait_why[k] = WaitWhy::None;
      index_job(m, k, size, may_resize(k, pinned), true);
    } else {
      a.wait_why[k] = WaitWhy::NoRoom;
      ++m.waiting;
    }
  }
  a.free = h.free;
  a.admitted = h.admitted;
}


}  // namespace doubling_internal
}  // namespace ringsched
