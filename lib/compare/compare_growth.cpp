// Phase of the comparison: per epoch, how far the compared runs have drifted from the reference
// run: loss distance (absolute and in ulp) over the epoch's steps, parameters whose digest differs
// at its last step, eval accuracy distance and, when epoch snapshots were written, the largest
// weight difference (compare_phases.h).
#include <algorithm>
#include <bit>
#include <cmath>

#include "compare/compare_phases.h"

namespace ra::audit::phases {
namespace {

// Loss distance over the epoch's steps; returns the epoch's last step (-1: none recorded).
std::int64_t add_loss_growth(const ComparedRuns& compared, EpochGrowth& g) {
  const std::vector<const Trace*>& runs = compared.traces;
  std::int64_t last_step = -1;
  for (std::int64_t s = 0; s < compared.common_steps; ++s) {
    if (runs[0]->steps[s].epoch != g.epoch) continue;
    last_step = s;
    const float ref = std::bit_cast<float>(runs[0]->steps[s].loss_bits);
    for (std::size_t i = 1; i < runs.size(); ++i) {
      const float other = std::bit_cast<float>(runs[i]->steps[s].loss_bits);
      g.max_abs_loss_difference =
          std::max(g.max_abs_loss_difference, std::abs(static_cast<double>(other) - ref));
      g.max_loss_ulp = std::max(g.max_loss_ulp, ulp_distance(ref, other));
    }
  }
  return last_step;
}

int weights_differing_at(const ComparedRuns& compared, std::int64_t step) {
  const std::vector<const Trace*>& runs = compared.traces;
  int differing = 0;
  for (std::size_t p = 0; p < runs[0]->header.params.size(); ++p) {
    bool differs = false;
    for (std::size_t i = 1; i < runs.size(); ++i) {
      differs |= runs[i]->steps[step].weights[p] != runs[0]->steps[step].weights[p];
    }
    differing += differs ? 1 : 0;
  }
  return differing;
}

double max_eval_accuracy_difference(const ComparedRuns& compared, const EpochRecord& e) {
  double worst = 0;
  for (std::size_t i = 1; i < compared.traces.size(); ++i) {
    for (const EpochRecord& o : compared.traces[i]->epochs) {
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
  std::vector<EpochGrowth> growth;
  if (compared.traces.size() < 2) return growth;
  for (const EpochRecord& e : compared.traces[0]->epochs) {
    EpochGrowth g;
    g.epoch = e.epoch;
    const std::int64_t last_step = add_loss_growth(compared, g);
    if (last_step >= 0) g.weights_differing = weights_differing_at(compared, last_step);
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

}  // namespace ra::audit::phases
