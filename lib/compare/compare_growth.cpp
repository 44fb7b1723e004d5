// Phase of the comparison: per epoch, how far the compared runs have drifted from the reference
// run: loss distance (absolute and in ulp) over the epoch's steps, parameters whose digest differs
// at its last step, eval accuracy distance and, when epoch snapshots were written, the largest
// weight difference (compare_phases.h).
#include <algorithm>
#include <cmath>

#include "compare/compare_phases.h"
#include "compare/step_walk.h"

namespace ra::compare::phases {
namespace {

double max_eval_accuracy_difference(const ComparedRuns& compared, const trace::EpochRecord& e) {
  double worst = 0;
  for (std::size_t i = 1; i < compared.traces.size(); ++i) {
    for (const trace::EpochRecord& o : compared.traces[i]->epochs) {
      if (o.epoch == e.epoch && o.eval_accuracy) {
        worst = std::max(worst, std::abs(*o.eval_accuracy - *e.eval_accuracy));
      }
    }
  }
  return worst;
}

}  // namespace

std::vector<EpochGrowth> epoch_growth(const ComparedRuns& compared,
                                      const ComparisonOptions& options) {
  return epoch_growth(compared, options, walk_compared(compared).epochs);
}

std::vector<EpochGrowth> epoch_growth(const ComparedRuns& compared,
                                      const ComparisonOptions& options,
                                      const std::vector<EpochLosses>& losses) {
  std::vector<EpochGrowth> growth;
  if (compared.traces.size() < 2) return growth;
  for (const trace::EpochRecord& e : compared.traces[0]->epochs) {
    if (e.steps == 0) continue;  // an epoch without steps compares nothing (a warning says why)
    EpochGrowth g;
    g.epoch = e.epoch;
    std::int64_t last_step = -1;
    for (const EpochLosses& l : losses) {
      if (l.epoch != e.epoch) continue;
      g.max_abs_loss_difference = l.max_abs_loss_difference;
      g.max_loss_ulp = l.max_loss_ulp;
      g.weights_differing = l.weights_differing;
      last_step = l.last_step;
    }
    if (e.eval_accuracy)
      g.max_abs_eval_accuracy_difference = max_eval_accuracy_difference(compared, e);
    if (auto snap = snapshot_divergence(options, compared.ids, "epoch-" + std::to_string(e.epoch),
                                        last_step >= 0 ? std::optional(last_step) : std::nullopt)) {
      g.snapshot = snap->total;
    }
    growth.push_back(g);
  }
  return growth;
}

}  // namespace ra::compare::phases
