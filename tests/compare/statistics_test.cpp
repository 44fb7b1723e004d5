// Outcome statistics: summaries against hand values, the bootstrap std ratio's determinism and
// interval properties, ULP distances on hand-picked bit patterns, tensor comparison counts.
#include "compare/statistics.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using ra::compare::std_ratio;
using ra::compare::ulp_distance;

namespace {

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

float from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
std::uint32_t bits_of(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

// n values spread like a seed-to-seed loss distribution (deterministic, no RNG): 0.3 + 0.01 sin.
std::vector<double> spread_values(std::size_t n, double center, double scale, double phase) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i)
    v.push_back(center + scale * std::sin(1.7 * double(i) + phase));
  return v;
}

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

}  // namespace

TEST_CASE("summarize matches hand-computed values", "[statistics]") {
  // Mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; sample variance 32/7.
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  const auto s = ra::compare::summarize(v);
  CHECK(s.n == 8);
  CHECK(s.mean == 5.0);
  CHECK(s.std == Approx(std::sqrt(32.0 / 7.0)).epsilon(1e-15));
  CHECK(s.min == 2.0);
  CHECK(s.max == 9.0);

  const auto one = ra::compare::summarize(std::vector<double>{3.5});
  CHECK(one.n == 1);
  CHECK(one.mean == 3.5);
  CHECK(one.std == 0.0);  // undefined for one value: reported as 0
  CHECK(one.min == 3.5);
  CHECK(one.max == 3.5);

  const auto none = ra::compare::summarize({});
  CHECK(none.n == 0);
  CHECK(none.mean == 0.0);
  CHECK(none.std == 0.0);

  // Tiny spread on a large mean: 1e9 + {1, 2, 3} has std exactly 1. A one-pass sum of squares
  // (E[x^2] - E[x]^2 ~ 1e18 - 1e18) would lose it entirely.
  const auto big = ra::compare::summarize(std::vector<double>{1e9 + 1, 1e9 + 2, 1e9 + 3});
  CHECK(big.mean == 1e9 + 2);
  CHECK(big.std == 1.0);
}

TEST_CASE("std_ratio: ratio, deterministic percentile bootstrap interval", "[statistics]") {
  // same = 10 + different / 2: the same-seed spread is exactly half the different-seed spread.
  const std::vector<double> different = spread_values(12, 0.30, 0.01, 0.0);
  std::vector<double> same;
  for (double d : different) same.push_back(10 + 0.5 * (d - 0.30));
  const auto e = std_ratio(same, different);
  CHECK(e.ratio == Approx(0.5).epsilon(1e-9));
  CHECK(e.trustworthy);
  CHECK(e.warning.empty());
  CHECK(e.resamples == 2000);
  CHECK(e.confidence == 0.95);
  CHECK(e.low < e.ratio);
  CHECK(e.ratio < e.high);
  CHECK(e.low > 0);

  // Same inputs, same interval, to the bit (fixed Philox key, no global RNG state).
  const auto again = std_ratio(same, different);
  CHECK(same_bits(again.low, e.low));
  CHECK(same_bits(again.high, e.high));
  CHECK(same_bits(again.ratio, e.ratio));

  // Nearest-rank quantiles of one set of resamples: a 50 % interval lies inside the 95 % one.
  const auto half = std_ratio(same, different, 2000, 0.5);
  CHECK(half.low >= e.low);
  CHECK(half.high <= e.high);
  CHECK(half.high - half.low < e.high - e.low);

  // More runs, narrower interval around the same ratio. For normal data the standard error of
  // log(ratio) is about sqrt(2 / (n - 1)) = 0.10 at n = 200, so [0.41, 0.61] is a wide margin.
  const std::vector<double> many_different = spread_values(200, 0.30, 0.01, 0.3);
  std::vector<double> many_same;
  for (double d : many_different) many_same.push_back(0.5 * d);
  const auto many = std_ratio(many_same, many_different);
  CHECK(many.ratio == Approx(0.5).epsilon(1e-9));
  CHECK(many.low > 0.41);
  CHECK(many.high < 0.61);
  CHECK(many.low < 0.5);
  CHECK(many.high > 0.5);
  CHECK(many.high - many.low < e.high - e.low);
}

TEST_CASE("std_ratio resamples each group with replacement and independently", "[statistics]") {
  // Both groups hold the same values. Were they resampled with one set of indices, or permuted
  // instead of drawn with replacement, every resampled ratio would be exactly 1.
  const std::vector<double> values = spread_values(15, 1.0, 0.2, 0.0);
  const auto e = std_ratio(values, values);
  CHECK(e.ratio == 1.0);
  CHECK(e.low < 0.9);
  CHECK(e.high > 1.1);

  const auto single = std_ratio(values, values, 1);
  CHECK(single.resamples == 1);
  CHECK(single.low == single.high);

  CHECK_THROWS_AS(std_ratio(values, values, 0), std::invalid_argument);
  CHECK_THROWS_AS(std_ratio(values, values, 100, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(std_ratio(values, values, 100, 0.0), std::invalid_argument);
}

TEST_CASE("std_ratio warns when it cannot be trusted", "[statistics]") {
  const std::vector<double> ten = spread_values(10, 0.3, 0.01, 0.0);
  const std::vector<double> nine = spread_values(9, 0.3, 0.01, 0.5);
  const std::vector<double> constant(12, 0.25);

  const auto few = std_ratio(nine, ten);
  CHECK_FALSE(few.trustworthy);
  CHECK_THAT(few.warning, Catch::Contains("too few runs") && Catch::Contains("9 same-seed"));
  CHECK(few.resamples == 2000);  // an interval is still given, with its warning
  CHECK(std_ratio(ten, nine).warning.find("9 different-seed") != std::string::npos);
  CHECK(std_ratio(ten, ten).trustworthy);  // 10 is enough

  // Different seeds that do not vary: ratio undefined. Nothing varies -> 0; only same varies ->
  // inf.
  const auto flat = std_ratio(constant, constant);
  CHECK_FALSE(flat.trustworthy);
  CHECK_THAT(flat.warning, Catch::Contains("do not vary"));
  CHECK(flat.ratio == 0.0);
  CHECK(flat.resamples == 0);
  const auto inf = std_ratio(spread_values(12, 0.3, 0.01, 0.0), constant);
  CHECK(std::isinf(inf.ratio));
  CHECK_FALSE(inf.trustworthy);

  // One run per group: std 0 / 0, no bootstrap possible.
  const auto single = std_ratio(std::vector<double>{1.0}, std::vector<double>{2.0});
  CHECK_FALSE(single.trustworthy);
  CHECK(single.resamples == 0);
  CHECK(single.ratio == 0.0);
}

TEST_CASE("ulp_distance on the monotone integer line of float bits", "[statistics]") {
  const float one = 1.0f;
  CHECK(ulp_distance(one, one) == 0);
  CHECK(ulp_distance(one, std::nextafter(one, 2.0f)) == 1);
  CHECK(ulp_distance(std::nextafter(one, 0.0f), one) == 1);       // across an exponent boundary
  CHECK(ulp_distance(0.1f, from_bits(bits_of(0.1f) ^ 1u)) == 1);  // lowest mantissa bit flipped
  CHECK(ulp_distance(-0.1f, from_bits(bits_of(-0.1f) ^ 1u)) == 1);
  CHECK(ulp_distance(1.0f, 2.0f) == (1u << 23));  // one binade holds 2^23 floats
  CHECK(ulp_distance(2.0f, 1.0f) == (1u << 23));

  // Signs: -0 and +0 are different bits, adjacent on the line; the smallest denormals straddle
  // them.
  CHECK(ulp_distance(-0.0f, 0.0f) == 1);
  const float tiny = std::numeric_limits<float>::denorm_min();
  CHECK(ulp_distance(-tiny, tiny) == 3);  // -tiny, -0, +0, +tiny
  // 1 and -1: 0x3F800000 steps from +0 up to 1, as many from -1 up to -0, and 1 from -0 to +0.
  CHECK(ulp_distance(-1.0f, 1.0f) == 2ull * 0x3F800000u + 1);
  CHECK(ulp_distance(std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity()) ==
        1);
  CHECK(ulp_distance(-std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::infinity()) == 2ull * 0x7F800000u + 1);

  // NaN: equal bits are equal; anything else involving a NaN is as far as it gets.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float other_nan = from_bits(bits_of(nan) | 0x1234u);
  CHECK(ulp_distance(nan, nan) == 0);
  CHECK(ulp_distance(nan, other_nan) == kMaxU64);
  CHECK(ulp_distance(nan, 1.0f) == kMaxU64);
  CHECK(ulp_distance(1.0f, nan) == kMaxU64);
}

TEST_CASE("compare_tensors counts differing elements, max |difference| and max ULP",
          "[statistics]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ra::Tensor a(ra::Shape{2, 3});
  ra::Tensor b(ra::Shape{2, 3});
  const float av[] = {1.0f, 2.0f, 3.0f, -0.0f, nan, 5.0f};
  const float bv[] = {1.0f, 2.5f, std::nextafter(3.0f, 4.0f), 0.0f, nan, 5.0f};
  for (int i = 0; i < 6; ++i) {
    a[i] = av[i];
    b[i] = bv[i];
  }
  // Differing: 2 vs 2.5 (|d| 0.5; floats in [2, 4) are 2^-22 apart, so 0.5 is 2^21 ulp),
  // 3 vs next (1 ulp), -0 vs +0 (1 ulp, |d| 0). The NaNs have equal bits: not a difference.
  const auto d = ra::compare::compare_tensors(a, b);
  CHECK(d.differing == 3);
  CHECK(d.max_abs == 0.5);
  CHECK(d.max_ulp == (1u << 21));

  const auto same = ra::compare::compare_tensors(a, a);
  CHECK(same.differing == 0);
  CHECK(same.max_abs == 0.0);
  CHECK(same.max_ulp == 0);

  // A NaN against a number: counted, max ULP saturates, max |d| stays over the comparable pairs.
  b[4] = 7.0f;
  const auto with_nan = ra::compare::compare_tensors(a, b);
  CHECK(with_nan.differing == 4);
  CHECK(with_nan.max_ulp == kMaxU64);
  CHECK(with_nan.max_abs == 0.5);

  CHECK_THROWS_AS(ra::compare::compare_tensors(a, ra::Tensor(ra::Shape{3, 2})), std::logic_error);
}
