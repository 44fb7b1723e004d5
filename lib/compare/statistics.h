#pragma once
// Outcome statistics of an audit: spread of final loss/accuracy per seed group, how much of the
// seed-to-seed spread remains when seeds are pinned (std ratio with a bootstrap interval), and
// how far two fp32 results are apart (ULPs, sign flips, max |difference| absolute and relative,
// count of differing elements).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/tensor.h"

namespace ra::compare {

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

// The nearest-rank quantiles at (1 - confidence) / 2 and (1 + confidence) / 2 of `ratios`, which
// it sorts, into e.low and e.high: the percentile interval of std_ratio and of the instability
// finding's ratios. Nearest rank, so an infinite ratio never turns a bound into NaN: for 2000
// resamples at 95 %, ranks 50 and 1950 (1-based). `ratios` must not be empty.
void set_percentile_interval(std::vector<double>& ratios, RatioEstimate& e);

// ULP distance between two floats: |k(a) - k(b)| where k maps the IEEE-754 bit patterns onto the
// integers monotonically (negative floats below positive ones, -0 just below +0). So adjacent
// floats are 1 apart, a flip of the lowest mantissa bit is 1, -0 and +0 are 1 apart (their bits
// differ, and a bitwise auditor must not call them equal), the largest finite float and infinity
// are 1 apart, and a result that changed sign counts every float in between. 0 exactly when the
// bits are equal (NaN included); any other pair involving a NaN is UINT64_MAX.
std::uint64_t ulp_distance(float a, float b);

// How far two fp32 arrays are apart, element by element against the reference (docs/report.md,
// "Magnitudes"). ULP distance is exact, but across zero it counts every float between (about 2^31
// for 1e-3 against -1e-3): true and unusable. So pairs of opposite sign are counted apart, the ULP
// maximum is also given over the others, and the size of the difference against the tensor's own
// scale is given as a relative difference.
struct TensorDifference {
  std::int64_t differing = 0;   // elements whose bits differ
  std::int64_t sign_flips = 0;  // of them, pairs of nonzero numbers of opposite sign (a < 0 < b or
                                // b < 0 < a). Not a flip: +0 against -0 (equal values), a zero
                                // against a number (a value that reached zero has not changed
                                // sign), a NaN against anything (a NaN's sign means nothing)
  double max_abs = 0;           // max |a - b| over pairs without a NaN, in double (exact when a, b
                                // are within a factor 2^28: 24 + 28 + 1 bits fit in 53)
  // max |a - b| / max(|a|, |b|) with both maxima over the whole arrays: the largest difference as
  // a fraction of the largest finite magnitude of either array (normwise, not per element: per
  // element, every sign flip is 1 or more and values near zero blow it up, as ULPs do). 0 when
  // max_abs is 0 (also when both arrays are all zeros); +infinity when an infinity meets another
  // value.
  double max_relative = 0;
  std::uint64_t max_ulp = 0;  // max ulp_distance over every differing pair, sign flips included;
                              // UINT64_MAX when a NaN meets something else
  std::uint64_t max_ulp_same_sign = 0;  // max ulp_distance over the differing pairs that are no
                                        // sign flip (+0 against -0 is 1); UINT64_MAX when a NaN
                                        // meets something else; 0 when every difference is a flip
};
// Shapes must match (std::logic_error naming both shapes otherwise).
// Shapes must match (std::logic_error naming both shapes otherwise).
TensorDifference compare_tensors(const Tensor& a, const Tensor& b);
// The same over two arrays of equal length (std::logic_error otherwise).
TensorDifference compare_values(std::span<const float> a, std::span<const float> b);
// The worse of two differences of one tensor, field by field (counts too): the worst over runs.
TensorDifference widest(const TensorDifference& a, const TensorDifference& b);
// Differences of two tensors taken together: counts added, maxima the larger.
TensorDifference combined(const TensorDifference& a, const TensorDifference& b);

}  // namespace ra::compare
