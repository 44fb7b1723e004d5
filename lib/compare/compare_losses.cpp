// Phase of the comparison: how far the compared runs' losses are from the reference run's, from
// the traces alone: the first step whose loss differs (found by the walk over the steps,
// step_walk.h), the final loss, and the within-tolerance verdict on final losses
// (compare_phases.h).
#include <bit>
#include <cmath>

#include "compare/compare_phases.h"
#include "compare/step_walk.h"

namespace ra::compare::phases {
namespace {

float loss_value(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

std::uint32_t final_loss_bits(const trace::Trace& t, std::int64_t) {
  return t.final->final_loss_bits;
}

// The run (other than the reference) whose loss at `step` is farthest from the reference's.
std::optional<LossDifference> worst_loss_difference(const ComparedRuns& compared,
                                                    std::uint32_t (*bits_at)(const trace::Trace&,
                                                                             std::int64_t),
                                                    std::int64_t step) {
  const std::vector<const trace::Trace*>& runs = compared.traces;
  std::optional<LossDifference> worst;
  const std::uint32_t ref = bits_at(*runs[0], step);
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const std::uint32_t other = bits_at(*runs[i], step);
    if (other == ref) continue;
    LossDifference d{step, compared.ids[i], loss_value(ref), loss_value(other),
                     ulp_distance(loss_value(ref), loss_value(other))};
    if (!worst || d.ulp > worst->ulp) worst = d;
  }
  return worst;
}

}  // namespace

LossDifferences loss_differences(const ComparedRuns& compared, double tolerance) {
  return loss_differences(compared, tolerance, walk_compared(compared).first_loss);
}

LossDifferences loss_differences(const ComparedRuns& compared, double tolerance,
                                 const std::optional<LossDifference>& first) {
  LossDifferences out;
  out.tolerance = tolerance;
  if (compared.traces.size() >= 2) {
    out.first = first;
    out.final = worst_loss_difference(compared, final_loss_bits, 0);
  }
  for (const trace::Trace* t : compared.traces) {
    const double ref = loss_value(compared.traces[0]->final->final_loss_bits);
    const double other = loss_value(t->final->final_loss_bits);
    // NaN compares false: a NaN loss is never within tolerance (equal infinities are).
    const bool close = std::abs(other - ref) <= tolerance * std::abs(ref);
    if (!close && other != ref) out.within_tolerance = false;
  }
  return out;
}

}  // namespace ra::compare::phases
