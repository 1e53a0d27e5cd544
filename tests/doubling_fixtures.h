// SPDX-License-Identifier: GPL-2.0-or-later
// Doubling rounds built by hand for the doubling tests: speed curves, jobs, and the validity check
// every result must pass.
#pragma once

#include <cppunit/extensions/HelperMacros.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ringsched/doubling.h"
#include "ringsched/throughput.h"
#include "doubling_steps.h"

namespace doubling_fixtures {

using namespace ringsched;

// A speed curve given at powers of two (and any other listed size); 0 elsewhere.
inline std::function<double(int)> curve(std::map<int, double> points) {
  return [points](int n) {
    auto it = points.find(n);
    return it == points.end() ? 0.0 : it->second;
  };
}

// Each doubling multiplies the speed by 2 * efficiency: v(n) = v1 * (2 * efficiency)^log2(n).
inline std::function<double(int)> scaling(double v1, double efficiency) {
  return [v1, efficiency](int n) {
    double v = v1;
    for (int k = 1; k < n; k *= 2) v *= 2 * efficiency;
    return v;
  };
}

inline DoublingJob elastic(double remaining, int min, int max, std::function<double(int)> speed) {
  DoublingJob j;
  j.remaining = remaining;
  j.min_gpus = min;
  j.max_gpus = max;
  j.elastic = true;
  j.requested = min;
  j.speed = std::move(speed);
  return j;
}

inline DoublingJob running(DoublingJob j, int current, double last_resize_s) {
  j.running = true;
  j.current_gpus = current;
  j.last_resize_s = last_resize_s;
  return j;
}

inline std::vector<int> identity(size_t n) {
  std::vector<int> o(n);
  for (size_t i = 0; i < n; ++i) o[i] = static_cast<int>(i);
  return o;
}

inline void check_valid(const std::vector<DoublingJob>& jobs, int total, const DoublingResult& r) {
  long used = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    int g = r.gpus[j];
    used += g;
    if (g == 0) continue;
    CPPUNIT_ASSERT(jobs[j].speed(g) > 0);
    if (!jobs[j].elastic) {
      CPPUNIT_ASSERT_EQUAL(jobs[j].requested, g);
    } else {
      CPPUNIT_ASSERT(g >= jobs[j].min_gpus && g <= jobs[j].max_gpus);
      CPPUNIT_ASSERT(is_power_of_two(g));
    }
  }
  CPPUNIT_ASSERT(used <= total);
}

// A two-job round on `total` GPUs at `now_s`, `waiting` first in the policy order, for each
// mark of `running_job` (mark(job, on) sets it) and with `waiting` starving or not, under both
// step 3 paths (exact up to 16 jobs, incremental): check(marked, starving, result, what), `what`
// naming the case and both reasons for the assertion messages.
template <typename Mark, typename Check>
void for_each_mark_and_starving(const DoublingJob& running_job, const DoublingJob& waiting, int total,
                                double now_s, Mark mark, Check check) {
  ResizeCosts costs;  // restart 30 s, gain >= 2 x 30 s, interval 300 s
  for (int exact_max : {16, 0}) {
    DoublingSteps steps;
    steps.exact_hysteresis_max_jobs = exact_max;
    for (int marked : {0, 1})
      for (int starving : {0, 1}) {
        DoublingJob r = running_job, w = waiting;
        mark(r, marked != 0);
        w.starving = starving;
        const std::vector<DoublingJob> jobs = {r, w};
        DoublingResult result = doubling_heuristic(jobs, {1, 0}, total, costs, now_s, steps);
        check_valid(jobs, total, result);
        const std::string what = "exact_max " + std::to_string(exact_max) + " marked " +
                                 std::to_string(marked) + " starving " + std::to_string(starving) +
                                 ": running " + result.reasons[0] + "; waiting " + result.reasons[1];
        check(marked != 0, starving != 0, result, what);
      }
  }
}

}  // namespace doubling_fixtures
