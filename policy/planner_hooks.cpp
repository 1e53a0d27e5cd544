// SPDX-License-Identifier: GPL-2.0-or-later
#include "planner_hooks.h"

#include <cstdio>
#include <set>

#include "ringsched/similarity.h"
#include "ringsched/spb.h"

namespace ringsched {

int predict_unseen_models(ThroughputModel& model, const SimilarityModel& similarity,
                          const std::vector<Job>& jobs, const std::vector<std::string>& types) {
  std::set<std::string> done;
  int predicted = 0;
  for (const Job& j : jobs) {
    if (!done.insert(j.model).second) continue;
    bool missing = false;
    for (const std::string& t : types) missing = missing || !model.knows(j.model, t);
    if (!missing) continue;
    predicted += static_cast<int>(similarity.register_predictions(model, j.model, types).size());
  }
  return predicted;
}

void apply_spb(const ThroughputModel& model, const Job& job, bool contention, JobPlan& jp) {
  jp.spb_depth = 1.0;
  if (!job.spb || !contention || !jp.runs || jp.gpus < 2 || jp.gpus_by_type.size() != 1) return;
  const std::string& type = jp.gpus_by_type.begin()->first;
  if (!model.knows(job.model, type)) return;
  SpbFootprint f = spb_at_footprint(model, job.model, type, jp.gpus, SpbConfig());
  if (f.speedup() <= 1.0) return;
  jp.spb_depth = f.mean_depth;
  jp.predicted_iters_per_s = f.useful_iters_per_s;
  char buf[96];
  std::snprintf(buf, sizeof buf, "; SPB under contention: mean depth %.2f, %.0f%% faster",
                f.mean_depth, 100.0 * (f.speedup() - 1.0));
  jp.reason += buf;
}

}  // namespace ringsched
