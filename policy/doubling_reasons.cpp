// SPDX-License-Identifier: GPL-2.0-or-later
// One human-readable sentence per job of a doubling round.
#include "doubling_round.h"


namespace ringsched {
namespace doubling_internal {

DoublingResult DoublingRound::describe(const Assignment& a, const std::vector<char>& pinned,
                                       const std::vector<char>& pinned_for_interval,
                                       const std::vector<double>& resize_gain,
                                       const std::vector<char>& released) const {
  size_t n = curves_.size();
  DoublingResult r;
  r.gpus = a.gpus;
  r.fair_gpus = a.fair;
  r.fair_gpus.resize(n, 0);
  r.reasons.resize(n);
  std::string multiple = number(costs_.min_gain_multiple) + " x restart cost";
  for (size_t j = 0; j < n; ++j) {
    const DoublingJob& job = curves_.job(j);
    int g = a.gpus[j];
    int b = curves_.base(j);
    std::string& why = r.reasons[j];
    if (g == 0) {
      std::string lead = job.running ? "stopped: " : "waits: ";
      switch (a.wait_why[j]) {
        case WaitWhy::NoSpeed:
          why = lead + "no known speed on its minimum of " + std::to_string(b) + " GPUs";
          break;
        case WaitWhy::TooBig:
          why = lead + "needs " + std::to_string(b) + " GPUs, more than the " +
                std::to_string(curves_.total()) + " available";
          break;
        default:
          why = a.free_at_turn[j] == 0
                    ? lead + "no GPU left after higher-priority jobs"
                    : lead + "needs " + std::to_string(b) + " GPUs, only " +
                          std::to_string(a.free_at_turn[j]) + " left after higher-priority jobs";
      }
      continue;
    }
    r.objective_s += cost(j, g);
    if (!job.elastic) {
      why = "runs at its requested " + std::to_string(g) + " GPUs (inelastic)";
      continue;
    }
    if (job.running && pinned[j]) {
      if (pinned_for_interval[j])
        why = "kept at " + std::to_string(g) + ": started or resized " +
              seconds(now_s_ - job.last_resize_s) + " ago, minimum interval " +
              seconds(costs_.min_interval_s);
      else if (resize_gain[j] >= costs_.min_gain_multiple * costs_.restart_s)
        // Held for a gain that step 3 takes otherwise: only shrinks_into_late() pins so.
        why = "kept at " + std::to_string(g) + ": fewer GPUs would finish it later than its " +
              "fair share (its requested size alone) allows; the plan would gain " +
              seconds(resize_gain[j]);
      else if (resize_gain[j] > 0)
        why = "kept at " + std::to_string(g) + ": gain " + seconds(resize_gain[j]) + " < " +
              multiple;
      else  // the plan without the hold was worse: say so rather than print a negative gain
        why = "kept at " + std::to_string(g) + ": resizing it would cost the plan " +
              seconds(-resize_gain[j]) + " more";
      continue;
    }
    if (job.running && g != job.current_gpus) {
      std::string move = std::to_string(job.current_gpus) + "->" + std::to_string(g);
      if (!curves_.current_is_valid(j))
        why = "resized " + move + ": " + std::to_string(job.current_gpus) +
              " GPUs is not one of its allowed sizes";
      else if (released[j] == kReleasedForSqueeze && g < job.current_gpus)
        why = "shrinks " + move + ": GPUs lent above its request of " +
              std::to_string(job.fair_max_gpus) + " come back before a running job within its " +
              "own request is stopped or shrunk";
      else if (released[j] == kReleasedForShort && g < job.current_gpus)
        why = "shrinks " + move + ": GPUs lent above its request of " +
              std::to_string(job.fair_max_gpus) + " come back to a job below its request " +
              "that needs them; it still finishes before it would have alone at its request";
      else if (resize_gain[j] >= costs_.min_gain_multiple * costs_.restart_s)
        why = g > job.current_gpus
                  ? "grows " + move + ": saves " + seconds(resize_gain[j]) + ", at least " +
                        multiple
                  : "shrinks " + move + ": the plan gains " + seconds(resize_gain[j]) +
                        " from its GPUs, at least " + multiple;
      else  // a small gain that step 3 did not hold for: a fairness grant (fair_grow, starves)
        why = g > job.current_gpus
                  ? "grows " + move + ": it would finish later than its fair share (its " +
                        "requested size alone) allows"
                  : "shrinks " + move + ": a shorter job that is late needs its GPUs";
      continue;
    }
    std::string verb = job.running ? "keeps " : "starts at ";
    if (g > b && j < a.fair.size() && a.fair[j] == g) {
      why = verb + std::to_string(g) + ": fewer GPUs would finish it later than its fair share " +
            "(its requested size alone) allows";
      continue;
    }
    if (g > b) {
      double ti = (cost(j, g / 2) - cost(j, g)) / (g / 2);
      if (job.running)
        why = "keeps " + std::to_string(g) + ": its last doubling still saves " + seconds(ti) +
              " per added GPU";
      else
        why = "doubled " + std::to_string(g / 2) + "->" + std::to_string(g) + ": saves " +
              seconds(ti) + " per added GPU";
      continue;
    }
    // At its base size: say what stopped the doubling.
    long next = 2L * g;
    if (next > job.max_gpus)
      why = verb + std::to_string(g) + ": its maximum";
    else if (next > curves_.total() || curves_.speed(j, static_cast<int>(next)) <= 0)
      why = verb + std::to_string(g) + ": no known speed on " + std::to_string(next) + " GPUs";
    else if (cost(j, static_cast<int>(next)) >= cost(j, g))
      why = verb + std::to_string(g) + ": " + std::to_string(next) + " GPUs would not be faster";
    else if (a.free < g)
      why = verb + std::to_string(g) + ": doubling needs " + std::to_string(g) +
            " more GPUs, " + std::to_string(a.free) + " free after larger gains";
    else
      why = verb + std::to_string(g) + ": its GPUs save more time in other jobs";
  }
  return r;
}


}  // namespace doubling_internal
}  // namespace ringsched
