#pragma once
// Outcome statistics of an audit: spread of final loss/accuracy per seed group, how much of the
// seed-to-seed spread remains when seeds are pinned (std ratio with a bootstrap interval), and
// how far two fp32 results are apart (ULPs, max |difference|, count of differing elements).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/tensor.h"

namespace ra::audit {

struct Summary {
  std::size_t n = 0;
  double mean = 0, std = 0, min = 0, max = 0;  // std: sample std (divides by n - 1); 0 when n < 2
};
// All zero for no values. Two passes (mean, then squared deviations): no cancellation when the
// spread is tiny next to the mean, which is the common case here (losses equal to 6 digits).
Summary summarize(std::span<const double> values);

struct RatioEstimate {
  double ratio = 0;          // std(same_seed) / std(different_seed)
  double low = 0, high = 0;  // percentile bootstrap interval
  double confidence = 0.95;
  int resamples = 0;  // bootstrap resamples actually drawn (0 when no interval could be made)
  bool trustworthy =
      false;            // false when either group has fewer than 10 runs or std(different) == 0
  std::string warning;  // why it cannot be trusted, when it cannot
};
inline constexpr std::size_t kMinRunsForTrustedRatio = 10;

// Ratio of spreads, with 0/0 = 0 (neither group varies: pinning the seed left nothing to remove)
// and s/0 = +infinity for s > 0. Bootstrap: each group is resampled with replacement,
// independently, `resamples` times and the ratio recomputed; the interval is the pair of
// empirical quantiles at (1 - confidence) / 2 and (1 + confidence) / 2 (nearest rank, so an
// infinite resample never turns the bound into NaN). The resampling RNG is Philox with the fixed
// key rng::derive_key(0, "stats/bootstrap"), so the same inputs always give the same interval.
// No bootstrap (resamples = 0, interval = [ratio, ratio]) when a group has fewer than 2 values or
// std(different) == 0. std::invalid_argument for resamples < 1 or confidence outside (0, 1).
RatioEstimate std_ratio(std::span<const double> same_seed, std::span<const double> different_seed,
                        int resamples = 2000, double confidence = 0.95);

// ULP distance between two floats: |k(a) - k(b)| where k maps the IEEE-754 bit patterns onto the
// integers monotonically (negative floats below positive ones, -0 just below +0). So adjacent
// floats are 1 apart, a flip of the lowest mantissa bit is 1, -0 and +0 are 1 apart (their bits
// differ, and a bitwise auditor must not call them equal), the largest finite float and infinity
// are 1 apart, and a result that changed sign counts every float in between. 0 exactly when the
// bits are equal (NaN included); any other pair involving a NaN is UINT64_MAX.
std::uint64_t ulp_distance(float a, float b);

struct TensorDifference {
  std::int64_t differing = 0;  // elements whose bits differ
  double max_abs = 0;          // max |a - b| over pairs without a NaN, in double (exact when a, b
                               // are within a factor 2^28: 24 + 28 + 1 bits fit in 53)
  std::uint64_t max_ulp = 0;   // max ulp_distance; UINT64_MAX when a NaN meets something else
};
// Shapes must match (std::logic_error naming both shapes otherwise).
TensorDifference compare_tensors(const Tensor& a, const Tensor& b);
// The same over two arrays of equal length (std::logic_error otherwise).
TensorDifference compare_values(std::span<const float> a, std::span<const float> b);

}  // namespace ra::audit
