#pragma once
// Does the nondeterminism matter? With --seeds all an audit has three groups of runs: the same
// seed (nondeterminism alone), different seeds (every source of randomness) and perturbed (the
// same seed, deterministic kernels, one bit of one initial weight flipped: the instability floor
// of Summers & Dinneen, ICML 2021). Per metric (final loss, eval accuracy, prediction
// disagreement) each group's spread, the ratios same/different, perturbed/different and
// same/perturbed with seeded bootstrap intervals, and one sentence saying what the ratio means
// (docs/statistics.md: the method, the threshold and its sources).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/statistics.h"
#include "trace/trace.h"

namespace ra::compare {

// Fraction of samples whose predicted class differs between two runs (equal lengths;
// std::logic_error otherwise); 0 for no samples.
double disagreement(std::span<const std::int64_t> a, std::span<const std::int64_t> b);
// Mean disagreement over every pair of distinct runs (i < j); 0 with fewer than two runs.
double mean_pairwise_disagreement(const std::vector<std::span<const std::int64_t>>& runs);

// Bootstrap resample `draw` of n items: n indices in [0, n), drawn with replacement from the
// Philox stream "stats/bootstrap" (key derive_key(0, "stats/bootstrap")), position i of draw d
// taking block (i, d): the very draws std_ratio makes, so its intervals and these agree.
std::vector<std::size_t> bootstrap_indices(std::size_t n, std::uint64_t draw);

// The ratio statistic(numerator group) / statistic(denominator group) (0/0 = 0, s/0 = +infinity),
// with a percentile interval: in resample r the numerator group takes bootstrap_indices(draw 2r)
// and the denominator group draw 2r + 1; nearest-rank quantiles, as std_ratio. No interval
// (resamples 0) when a group has fewer than 2 runs or the denominator's statistic is 0. `trusted`
// and its warning as std_ratio's (at least kMinRunsForTrustedRatio runs a group).
using GroupStatistic = std::function<double(std::span<const std::size_t> runs)>;
RatioEstimate bootstrap_ratio(std::size_t numerator_runs, const GroupStatistic& numerator,
                              std::size_t denominator_runs, const GroupStatistic& denominator,
                              int resamples = 2000, double confidence = 0.95);

// Above this same/perturbed ratio, nondeterminism spreads results more than the 1-bit change:
// an op amplifies differences. At or below it, the nondeterminism is only a trigger of an
// instability the training has anyway (docs/statistics.md, "Interpretation").
inline constexpr double kAmplificationThreshold = 2.0;

enum class InstabilityVerdict {
  no_spread,   // neither the same-seed nor the perturbed runs spread on this metric
  repeatable,  // the same-seed runs do not spread; the perturbed ones do
  unstable,    // same/perturbed <= threshold: nondeterminism triggers an instability
  amplifying,  // same/perturbed > threshold: a nondeterministic op amplifies differences
  // Both spreads within two float32 ULPs of the values: a ratio of such spreads (1 ULP against 0
  // is "inf") is an inference at the float resolution, no evidence either way.
  at_resolution,
};
const char* to_string(InstabilityVerdict v);  // "no_spread", "repeatable", ...

struct MetricSpread {
  std::string group;  // "same", "different", "perturbed"
  std::size_t runs = 0;
  double mean = 0;    // the metric's mean over the group's runs (disagreement: over its pairs)
  double spread = 0;  // std over runs; disagreement: the mean pairwise disagreement
  std::vector<double> values;  // per run; disagreement: per pair (i < j), for the plot
};

struct MetricFinding {
  std::string metric;                // "final_loss", "eval_accuracy", "disagreement"
  std::vector<MetricSpread> groups;  // same, different, perturbed (those with runs)
  std::optional<RatioEstimate> same_over_different, perturbed_over_different, same_over_perturbed;
  InstabilityVerdict verdict = InstabilityVerdict::no_spread;
  std::string interpretation;  // one sentence, with the ratio and its interval
};

// Whether a perturbed run's initial weights part from the reference run's exactly at its flipped
// weight: the tensor holding it differs, and no other (digests of the initial weights).
struct PerturbedRunCheck {
  int run = 0;  // index among the traces
  trace::Perturbation perturbation;
  std::vector<std::string> differing;  // the initial tensors that differ from the reference's
  bool parts_at_perturbation() const {
    return differing.size() == 1 && differing[0] == perturbation.tensor;
  }
};

struct InstabilityFindings {
  int reference = 0;  // the run the perturbed runs are checked against (the first same-seed run)
  std::vector<PerturbedRunCheck> perturbed;
  std::vector<MetricFinding> metrics;  // those the three groups have (accuracy needs an eval set)
  std::vector<std::string> notes;      // what is missing (a run without predictions...)
};

// The verdict and sentence for one metric's ratios (`what`: "final loss", ...).
void interpret(MetricFinding& finding, const std::string& what);

// The findings of traces with a perturbed group; none when there is none. `predictions`: each
// run's predicted classes (none for a run that recorded none).
std::optional<InstabilityFindings> instability_findings(
    const std::vector<trace::Trace>& traces,
    const std::vector<std::optional<std::vector<std::int64_t>>>& predictions);

}  // namespace ra::compare
