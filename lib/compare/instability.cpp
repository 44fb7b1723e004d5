// The statistics of the instability finding: disagreement, the seeded bootstrap of a ratio of two
// groups' statistics, and the sentence that says what the ratio means (compare/instability.h).
#include "compare/instability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "rng/philox.h"
#include "rng/stream.h"

namespace ra::compare {
namespace {

double ratio_of(double numerator, double denominator) {
  if (denominator > 0) return numerator / denominator;
  return numerator > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

std::vector<std::size_t> identity(std::size_t n) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  return all;
}

// "0.93", "3.1", "inf": two significant digits, as the sentence quotes a ratio.
std::string ratio_text(double r) {
  if (std::isinf(r)) return "inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", r);
  return text;
}

std::string estimate_text(const RatioEstimate& e) {
  std::string text = ratio_text(e.ratio);
  if (e.resamples > 0) text += " [" + ratio_text(e.low) + ", " + ratio_text(e.high) + "]";
  return text;
}

}  // namespace

double disagreement(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  if (a.size() != b.size()) {
    throw std::logic_error("disagreement: " + std::to_string(a.size()) + " against " +
                           std::to_string(b.size()) + " predictions");
  }
  if (a.empty()) return 0.0;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i] ? 1 : 0;
  return static_cast<double>(differ) / static_cast<double>(a.size());
}

double mean_pairwise_disagreement(const std::vector<std::span<const std::int64_t>>& runs) {
  double sum = 0;
  std::size_t pairs = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t j = i + 1; j < runs.size(); ++j, ++pairs)
      sum += disagreement(runs[i], runs[j]);
  }
  return pairs == 0 ? 0.0 : sum / static_cast<double>(pairs);
}

std::vector<std::size_t> bootstrap_indices(std::size_t n, std::uint64_t draw) {
  const rng::PhiloxKey key = rng::derive_key(0, "stats/bootstrap");
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const rng::PhiloxBlock block = rng::philox_block(key, i, draw);
    const std::uint64_t random64 = (static_cast<std::uint64_t>(block.v[1]) << 32) | block.v[0];
    out[i] = static_cast<std::size_t>(rng::uniform_below(random64, n));
  }
  return out;
}

RatioEstimate bootstrap_ratio(std::size_t numerator_runs, const GroupStatistic& numerator,
                              std::size_t denominator_runs, const GroupStatistic& denominator,
                              int resamples, double confidence) {
  if (resamples < 1) throw std::invalid_argument("bootstrap_ratio: resamples must be at least 1");
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument("bootstrap_ratio: confidence must lie in (0, 1)");
  }
  RatioEstimate e;
  e.confidence = confidence;
  const double den = denominator(identity(denominator_runs));
  e.ratio = ratio_of(numerator(identity(numerator_runs)), den);
  e.low = e.high = e.ratio;
  if (numerator_runs < kMinRunsForTrustedRatio || denominator_runs < kMinRunsForTrustedRatio) {
    e.warning = "too few runs for a reliable spread: " + std::to_string(numerator_runs) + " and " +
                std::to_string(denominator_runs) + " (at least " +
                std::to_string(kMinRunsForTrustedRatio) + " each needed)";
  } else if (den == 0) {
    e.warning = "the denominator's runs do not vary: the ratio is undefined";
  } else {
    e.trustworthy = true;
  }
  if (numerator_runs < 2 || denominator_runs < 2 || den == 0) return e;
  std::vector<double> ratios(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    const auto draw = 2 * static_cast<std::uint64_t>(r);
    ratios[static_cast<std::size_t>(r)] =
        ratio_of(numerator(bootstrap_indices(numerator_runs, draw)),
                 denominator(bootstrap_indices(denominator_runs, draw + 1)));
  }
  set_percentile_interval(ratios, e);
  e.resamples = resamples;
  return e;
}

const char* to_string(InstabilityVerdict v) {
  switch (v) {
    case InstabilityVerdict::no_spread:
      return "no_spread";
    case InstabilityVerdict::repeatable:
      return "repeatable";
    case InstabilityVerdict::unstable:
      return "unstable";
    case InstabilityVerdict::amplifying:
      return "amplifying";
    case InstabilityVerdict::at_resolution:
      return "at_resolution";
  }
  return "?";
}

namespace {

// Two float32 ULPs at the largest magnitude among the same-seed and perturbed runs' values: the
// float resolution of a spread of them (float's ULP at x is at most x * 2^-23).
double float_resolution(const MetricFinding& f) {
  double largest = 0;
  for (const MetricSpread& g : f.groups) {
    if (g.group == "different") continue;
    for (double v : g.values) largest = std::max(largest, std::abs(v));
  }
  return std::ldexp(largest, -22);
}

}  // namespace

void interpret(MetricFinding& f, const std::string& what) {
  double same = 0, perturbed = 0;
  for (const MetricSpread& g : f.groups) {
    if (g.group == "same") same = g.spread;
    if (g.group == "perturbed") perturbed = g.spread;
  }
  const double resolution = float_resolution(f);
  if ((same > 0 || perturbed > 0) && same <= resolution && perturbed <= resolution) {
    f.verdict = InstabilityVerdict::at_resolution;
    f.interpretation = what + ": the same-seed and perturbed runs spread by at most two float32 " +
                       "ULPs of the values (" + ratio_text(same) + " and " + ratio_text(perturbed) +
                       "): at the resolution, no evidence either way; more steps or runs tell";
    return;
  }
  const std::string pd =
      f.perturbed_over_different ? estimate_text(*f.perturbed_over_different) : "n/a";
  const std::string sp = f.same_over_perturbed ? estimate_text(*f.same_over_perturbed) : "n/a";
  const double q = f.same_over_perturbed ? f.same_over_perturbed->ratio : ratio_of(same, perturbed);
  if (same == 0 && perturbed == 0) {
    f.verdict = InstabilityVerdict::no_spread;
    f.interpretation = what +
                       ": neither the same-seed nor the perturbed runs spread: no "
                       "instability shows at this scale";
  } else if (same == 0) {
    f.verdict = InstabilityVerdict::repeatable;
    f.interpretation = what +
                       ": the same-seed runs do not spread, a 1-bit change does "
                       "(perturbed/different " +
                       pd +
                       "): the runs are repeatable; the perturbed "
                       "group measures the instability the training has";
  } else if (q <= kAmplificationThreshold) {
    f.verdict = InstabilityVerdict::unstable;
    f.interpretation = what + ": same-seed nondeterminism spreads results " +
                       (q < 1 / kAmplificationThreshold ? "less than" : "as much as") +
                       " a 1-bit change (ratio " + sp +
                       "): the training is unstable at this "
                       "scale; deterministic kernels give repeatable runs, not better ones; to "
                       "reduce the spread, average over seeds or ensemble";
  } else {
    f.verdict = InstabilityVerdict::amplifying;
    const std::string how = std::isinf(q) ? std::string("while a 1-bit change does not spread them")
                                          : ratio_text(q) + "x more than a 1-bit change";
    f.interpretation = what + ": nondeterminism spreads results " + how + " (ratio " + sp +
                       "): a nondeterministic op amplifies differences; see the root cause";
  }
}

}  // namespace ra::compare
