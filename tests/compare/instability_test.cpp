// The instability finding (compare/instability.h): disagreement against hand counts, the seeded
// bootstrap against an independent recomputation on the same resamples, the interpretation at
// each side of its threshold, and the phase on traces built in memory: perturbed runs parted at
// their flipped weight (or not), spreads and churn per group.
#include "compare/instability.h"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#include "compare/compare.h"
#include "trace/in_memory_traces.h"

using ra::compare::bootstrap_indices;
using ra::compare::bootstrap_ratio;
using ra::compare::InstabilityVerdict;
using ra::compare::MetricFinding;
using ra::compare::RatioEstimate;

namespace {

// The sample std written out plainly (not summarize's): the reference of the bootstrap test.
double plain_std(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / static_cast<double>(v.size() - 1));
}

ra::compare::GroupStatistic std_statistic(const std::vector<double>& values) {
  return [&values](std::span<const std::size_t> runs) {
    std::vector<double> picked;
    for (std::size_t r : runs) picked.push_back(values[r]);
    return plain_std(picked);
  };
}

MetricFinding finding(double same, double perturbed, double same_over_perturbed) {
  MetricFinding f;
  f.metric = "final_loss";
  f.groups = {{"same", 8, 0.3, same, {}},
              {"different", 8, 0.3, 0.01, {}},
              {"perturbed", 8, 0.3, perturbed, {}}};
  RatioEstimate e;
  e.ratio = same_over_perturbed;
  e.low = same_over_perturbed * 0.5;
  e.high = same_over_perturbed * 1.5;
  e.resamples = 2000;
  f.same_over_perturbed = e;
  return f;
}

}  // namespace

TEST_CASE("disagreement counts the samples whose class differs", "[statistics][instability]") {
  const std::vector<std::int64_t> a = {0, 1, 2, 3}, b = {0, 1, 1, 3}, c = {1, 1, 2, 3};
  CHECK(ra::compare::disagreement(a, a) == 0.0);
  CHECK(ra::compare::disagreement(a, b) == 0.25);  // sample 2
  CHECK(ra::compare::disagreement(b, c) == 0.5);   // samples 0 and 2
  // Pairs (a,b) 1/4, (a,c) 1/4, (b,c) 2/4: mean 1/3.
  CHECK(ra::compare::mean_pairwise_disagreement({a, b, c}) == Approx(1.0 / 3).epsilon(1e-15));
  CHECK(ra::compare::mean_pairwise_disagreement({a}) == 0.0);
  CHECK(ra::compare::disagreement(std::vector<std::int64_t>{}, std::vector<std::int64_t>{}) == 0.0);
  CHECK_THROWS_AS(ra::compare::disagreement(a, std::vector<std::int64_t>{0}), std::logic_error);
}

TEST_CASE("the bootstrap ratio is the recomputation on the same resamples", "[statistics]") {
  const std::vector<double> num = {0.31, 0.29, 0.35, 0.30, 0.28, 0.33,
                                   0.36, 0.27, 0.32, 0.30, 0.34};
  const std::vector<double> den = {0.20, 0.45, 0.38, 0.25, 0.41, 0.30, 0.22, 0.50, 0.36, 0.29};
  const int resamples = 400;
  const RatioEstimate e =
      bootstrap_ratio(num.size(), std_statistic(num), den.size(), std_statistic(den), resamples);
  // The reference: resample r takes draw 2r for the numerator and 2r + 1 for the denominator;
  // sorted ratios, nearest rank at 2.5 % and 97.5 % (ranks 10 and 390 of 400, 1-based).
  std::vector<double> ratios;
  for (int r = 0; r < resamples; ++r) {
    std::vector<double> n, d;
    for (std::size_t i : bootstrap_indices(num.size(), 2 * r)) n.push_back(num[i]);
    for (std::size_t i : bootstrap_indices(den.size(), 2 * r + 1)) d.push_back(den[i]);
    ratios.push_back(plain_std(n) / plain_std(d));
  }
  std::sort(ratios.begin(), ratios.end());
  CHECK(e.ratio == Approx(plain_std(num) / plain_std(den)).epsilon(1e-15));
  CHECK(e.low == Approx(ratios[9]).epsilon(1e-15));
  CHECK(e.high == Approx(ratios[389]).epsilon(1e-15));
  CHECK(e.resamples == resamples);
  CHECK(e.trustworthy);
  // The same draws as std_ratio's: its interval over these values is this one.
  const RatioEstimate s = ra::compare::std_ratio(num, den, resamples);
  CHECK(s.low == Approx(e.low).epsilon(1e-12));
  CHECK(s.high == Approx(e.high).epsilon(1e-12));
  // Seeded: a second call gives the same bits.
  const RatioEstimate again =
      bootstrap_ratio(num.size(), std_statistic(num), den.size(), std_statistic(den), resamples);
  CHECK(std::bit_cast<std::uint64_t>(again.low) == std::bit_cast<std::uint64_t>(e.low));
}

TEST_CASE("bootstrap indices are a hand-checkable resample", "[statistics]") {
  const std::vector<std::size_t> i = bootstrap_indices(5, 0);
  CHECK(i.size() == 5);
  CHECK(std::all_of(i.begin(), i.end(), [](std::size_t k) { return k < 5; }));
  CHECK(bootstrap_indices(5, 0) == i);
  CHECK(bootstrap_indices(5, 1) != i);
  // Too few runs, or a denominator that does not vary: the point ratio, no interval.
  const std::vector<double> flat = {1, 1, 1};
  const std::vector<double> some = {1, 2, 3};
  const RatioEstimate e = bootstrap_ratio(3, std_statistic(some), 3, std_statistic(flat));
  CHECK(std::isinf(e.ratio));
  CHECK(e.resamples == 0);
  CHECK_FALSE(e.trustworthy);
}

TEST_CASE("the interpretation changes at its threshold", "[instability]") {
  REQUIRE(ra::compare::kAmplificationThreshold == 2.0);
  MetricFinding at =
      finding(0.02, 0.01, 2.0);  // at the threshold: still the training's instability
  ra::compare::interpret(at, "final loss");
  CHECK(at.verdict == InstabilityVerdict::unstable);
  CHECK(at.interpretation ==
        "final loss: same-seed nondeterminism spreads results as much as a 1-bit change (ratio 2 "
        "[1, 3]): the training is unstable at this scale; deterministic kernels give repeatable "
        "runs, not better ones; to reduce the spread, average over seeds or ensemble");

  MetricFinding above = finding(0.0201, 0.01, 2.01);
  ra::compare::interpret(above, "final loss");
  CHECK(above.verdict == InstabilityVerdict::amplifying);
  CHECK(above.interpretation ==
        "final loss: nondeterminism spreads results 2x more than a 1-bit change (ratio 2 [1, "
        "3]): a nondeterministic op amplifies differences; see the root cause");

  MetricFinding low = finding(0.001, 0.01, 0.1);
  ra::compare::interpret(low, "eval accuracy");
  CHECK(low.verdict == InstabilityVerdict::unstable);
  CHECK_THAT(low.interpretation, Catch::Contains("spreads results less than a 1-bit change"));

  MetricFinding repeatable = finding(0.0, 0.01, 0.0);
  ra::compare::interpret(repeatable, "disagreement");
  CHECK(repeatable.verdict == InstabilityVerdict::repeatable);

  MetricFinding none = finding(0.0, 0.0, 0.0);
  ra::compare::interpret(none, "disagreement");
  CHECK(none.verdict == InstabilityVerdict::no_spread);
}

TEST_CASE("spreads at the float resolution are no evidence either way", "[instability]") {
  // Issue 61: a same-seed spread of 1 ULP against a perturbed spread of 0 read "ratio inf: a
  // nondeterministic op amplifies differences".
  const float loss = 0.3f;
  const double ulp = std::nextafter(loss, 1.0f) - loss;
  MetricFinding f = finding(ulp / std::sqrt(2.0), 0.0, std::numeric_limits<double>::infinity());
  f.groups[0].values = {loss, std::nextafter(loss, 1.0f)};
  f.groups[2].values = {loss, loss};
  ra::compare::interpret(f, "final loss");
  CHECK(f.verdict == InstabilityVerdict::at_resolution);
  CHECK_THAT(f.interpretation, Catch::Contains("at the resolution, no evidence either way"));
  CHECK(std::string(ra::compare::to_string(f.verdict)) == "at_resolution");
  // Ten ULPs are past it: the ratio speaks again.
  f.groups[0].values = {loss, loss + static_cast<float>(10 * ulp)};
  f.groups[0].spread = 10 * ulp / std::sqrt(2.0);
  ra::compare::interpret(f, "final loss");
  CHECK(f.verdict == InstabilityVerdict::amplifying);
}

TEST_CASE("perturbed runs part at their weight, with churn and spreads per group",
          "[instability]") {
  ra::test::TraceBuilder same;
  same.eval_accuracy = {0.5, 0.75};
  ra::test::TraceBuilder different = same;
  different.seed_group = "different";
  different.seed = 7;
  ra::test::TraceBuilder perturbed = same;
  perturbed.seed_group = "perturbed";
  std::vector<ra::trace::Trace> traces = {same.build(0),      same.build(1),
                                          different.build(2), different.build(3),
                                          perturbed.build(4), perturbed.build(5)};
  traces[1].final->eval_accuracy = 0.8;
  traces[3].final->eval_accuracy = 0.9;
  traces[5].final->eval_accuracy = 0.7;
  for (int i : {4, 5}) {
    traces[i].header.perturbation = ra::trace::Perturbation{"dense_1.weight", i, 0, 2, 3};
    traces[i].initial_weights[2] = ra::test::changed(traces[i].initial_weights[2]);
  }
  traces[5].initial_weights[0] = ra::test::changed(traces[5].initial_weights[0]);  // not only
  using Classes = std::vector<std::int64_t>;
  const std::vector<std::optional<Classes>> predictions = {
      Classes{0, 1, 2, 3}, Classes{0, 1, 2, 1}, Classes{0, 0, 0, 3},
      Classes{1, 1, 2, 3}, Classes{0, 1, 2, 3}, Classes{0, 1, 2, 3}};

  const auto found = ra::compare::instability_findings(traces, predictions);
  REQUIRE(found);
  CHECK(found->reference == 0);
  REQUIRE(found->perturbed.size() == 2);
  CHECK(found->perturbed[0].parts_at_perturbation());
  CHECK(found->perturbed[0].differing == std::vector<std::string>{"dense_1.weight"});
  CHECK_FALSE(found->perturbed[1].parts_at_perturbation());
  REQUIRE(found->metrics.size() == 3);
  const MetricFinding& accuracy = found->metrics[1];
  CHECK(accuracy.metric == "eval_accuracy");
  CHECK(accuracy.groups[0].spread == Approx(plain_std({0.75, 0.8})));
  CHECK(accuracy.groups[2].spread == Approx(plain_std({0.75, 0.7})));
  const MetricFinding& churn = found->metrics[2];
  CHECK(churn.metric == "disagreement");
  CHECK(churn.groups[0].spread == 0.25);  // sample 3
  CHECK(churn.groups[1].spread == 0.75);  // samples 0, 1, 2
  CHECK(churn.groups[2].spread == 0.0);
  CHECK(churn.verdict == InstabilityVerdict::amplifying);  // 0.25 against 0: infinitely more
  CHECK(churn.same_over_different->ratio == Approx(1.0 / 3));

  // Without a perturbed group there is no finding.
  traces.resize(4);
  CHECK_FALSE(ra::compare::instability_findings(traces, {4, std::nullopt}));
}
