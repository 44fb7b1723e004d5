#pragma once
// Two programs judged against a measured floor (--expect equivalent; docs/equivalence.md, "The
// floor"): programs that should compute the same by another reduction order agree to rounding, not
// to the bit, so "how far apart" means nothing without "how far apart rounding alone puts a run".
// The floor is measured, not assumed: runs of program A with one bit of one initial weight flipped
// (the perturbed group, --seeds all) part from A by what a change of one unit in the last place
// grows into, step by step; program B is within the floor while its distance from A stays within
// a margin of that. What is compared is each step's loss, which every trace holds as a value.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "trace/trace.h"

namespace ra::compare {

// Which trace is which, by position: program A, program B, then the floor runs: runs of A that
// differ from it by rounding alone. Either perturbed runs of A (one bit of one initial weight
// flipped: --seeds all) or runs of A's spec with another reduction order (the engine's
// nondeterministic mode, another thread count): a one-bit flip of one weight is the smallest
// change and can stay below a loss's last place for many steps, while another reduction order
// changes every sum a little; the floor is the widest of them.
struct EquivalenceRoles {
  int a = 0, b = 1;
  std::vector<int> floor_runs;
};
// InputError (exit 2) when fewer than three traces are given (a floor that cannot be measured is
// refused, not read as zero), or a floor run is not a run of A: neither perturbed nor of A's spec,
// or under other seeds than A's.
EquivalenceRoles equivalence_roles(const std::vector<trace::Trace>& traces);

// Per common step: B's distance from A, the floor measured there (the widest distance of a floor
// run from A), and the floor the verdict uses: the widest measured so far, and never under one
// unit in the last place of A's loss (a floor run equal to A at a step does not make every
// difference of B there beyond it).
struct EquivalenceCurve {
  std::vector<std::int64_t> steps;
  std::vector<double> loss_a, loss_b;
  std::vector<double> distance, measured_floor, floor;
  double margin = 10.0;
  // Some floor run's loss differed from A's at some step. Not so, the floor is one unit in the
  // last place of A's loss (the finding says so; it is inconclusive only when the floor runs do
  // not differ from A at all).
  bool floor_seen = false;
  // The first step whose distance exceeds margin times the floor; none: within it throughout.
  std::optional<std::size_t> beyond_from;  // an index into steps
  // distance / floor at beyond_from, or the largest over the steps when within.
  double ratio = 0.0;
  std::size_t ratio_at = 0;  // where that ratio is
};

// The parameters at the steps all of A, B and some floor run wrote snapshots of (exec --versus:
// steps 0, 1, 2, 4, 8, ...; the engine's --snapshot steps): per parameter, B's largest absolute
// difference from A against the floor's (the widest of a floor run's so far for that parameter,
// at least one ulp of A's largest magnitude there).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
struct ParameterPoint {
  std::int64_t step = 0;  // after which step
  NamedTensors a, b;
  std::vector<NamedTensors> floor_runs;  // those that wrote this step's snapshot
};
struct ParameterCheck {
  std::int64_t step = 0;
  std::string tensor;
  double distance = 0.0, floor = 0.0;
  double ratio() const { return distance / floor; }
};
struct ParameterFloor {
  std::vector<std::int64_t> steps;       // the snapshot steps judged
  std::size_t tensors = 0;               // parameters compared at each
  std::optional<ParameterCheck> beyond;  // the first (by step, then the parameter's order)
  std::optional<ParameterCheck> widest;  // the largest ratio when within
};
// InputError when a snapshot's tensors are not A's (names, shapes).
ParameterFloor parameter_floor(const std::vector<ParameterPoint>& points, double margin);

// The losses of A, B and each floor run, step by step from step 0 (ComparisonResult::series): the
// steps all of them recorded are compared. `margin` > 0.
EquivalenceCurve equivalence_curve(const std::vector<float>& a, const std::vector<float>& b,
                                   const std::vector<std::vector<float>>& floor_runs,
                                   double margin);

}  // namespace ra::compare
