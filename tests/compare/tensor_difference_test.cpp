// compare_values' magnitudes that cross zero (compare/statistics.h TensorDifference): sign flips
// counted apart, the ULP maximum over same-sign pairs beside the one over every pair, and the
// relative difference against the arrays' largest magnitude. Every expected value is worked out
// by hand from the bit patterns, in the comments.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "compare/statistics.h"

namespace {

using ra::compare::compare_values;
using ra::compare::TensorDifference;

constexpr std::uint64_t kMaxUlp = std::numeric_limits<std::uint64_t>::max();

float float_of_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

TensorDifference diff(const std::vector<float>& a, const std::vector<float>& b) {
  return compare_values(a, b);
}

}  // namespace

TEST_CASE("same-sign differences: both ULP maxima agree, no flip, relative to the largest value",
          "[statistics][magnitude]") {
  // 2 vs 2.5: floats in [2, 4) are 2^-22 apart, so 0.5 is 2^21 ulp; |d| 0.5. The largest
  // magnitude of either array is 4, so the relative difference is 0.5 / 4 = 0.125.
  const TensorDifference d = diff({1.0f, 2.0f, 4.0f, -3.0f}, {1.0f, 2.5f, 4.0f, -3.0f});
  CHECK(d.differing == 1);
  CHECK(d.sign_flips == 0);
  CHECK(d.max_abs == 0.5);
  CHECK(d.max_relative == 0.125);
  CHECK(d.max_ulp == (1u << 21));
  CHECK(d.max_ulp_same_sign == (1u << 21));
  // Both negative: -3 vs -3 - 2^-22 (the next float down) is 1 ulp, not a flip.
  const TensorDifference n = diff({-3.0f}, {std::nextafter(-3.0f, -4.0f)});
  CHECK(n.sign_flips == 0);
  CHECK(n.max_ulp_same_sign == 1);
  CHECK(n.max_relative == std::ldexp(1.0, -22) / (3.0 + std::ldexp(1.0, -22)));
}

TEST_CASE("a sign flip is counted apart and kept out of the same-sign ULP maximum",
          "[statistics][magnitude]") {
  // 1e-3f has bits 0x3A83126F = 981668463. Against -1e-3f every float between counts: from
  // +x down to +0 is 981668463 ulp, +0 to -0 is 1, -0 down to -x 981668463 again: 1963336927
  // (the "max 1949340462 ulp" is of this kind). |d| = 2 * 1e-3f; largest magnitude 4.
  const float x = 1e-3f;
  REQUIRE(std::bit_cast<std::uint32_t>(x) == 0x3A83126Fu);
  const TensorDifference flip = diff({x, -2.0f, 4.0f}, {-x, -2.0f, 4.0f});
  CHECK(flip.differing == 1);
  CHECK(flip.sign_flips == 1);
  CHECK(flip.max_ulp == 1963336927u);
  CHECK(flip.max_ulp_same_sign == 0);  // every difference is a flip
  CHECK(flip.max_abs == 2.0 * double(x));
  CHECK(flip.max_relative == 2.0 * double(x) / 4.0);

  // With a same-sign difference beside it: 4 vs the next float up is 1 ulp (4 + 2^-21).
  const TensorDifference mixed = diff({x, -2.0f, 4.0f}, {-x, -2.0f, std::nextafter(4.0f, 5.0f)});
  CHECK(mixed.differing == 2);
  CHECK(mixed.sign_flips == 1);
  CHECK(mixed.max_ulp == 1963336927u);
  CHECK(mixed.max_ulp_same_sign == 1);
  CHECK(mixed.max_abs == 2.0 * double(x));
  CHECK(mixed.max_relative == 2.0 * double(x) / (4.0 + std::ldexp(1.0, -21)));
}

TEST_CASE("zeros: +0 against -0 and a zero against a number are no sign flips",
          "[statistics][magnitude]") {
  const float denorm = float_of_bits(1);  // 2^-149, the smallest float
  // +0 vs -0: bits differ (1 ulp), values equal (|d| 0). 0 vs -2^-149: keys 0x80000000 and
  // 0x7FFFFFFE, 2 ulp. 2^-149 vs -0: keys 0x80000001 and 0x7FFFFFFF, 2 ulp. Neither is a flip:
  // a value that reached zero has not changed sign. |d| 2^-149, largest magnitude 2^-149.
  const TensorDifference d = diff({0.0f, -0.0f, 0.0f, denorm}, {-0.0f, 0.0f, -denorm, -0.0f});
  CHECK(d.differing == 4);
  CHECK(d.sign_flips == 0);
  CHECK(d.max_ulp == 2);
  CHECK(d.max_ulp_same_sign == 2);
  CHECK(d.max_abs == std::ldexp(1.0, -149));
  CHECK(d.max_relative == 1.0);

  // Only signed zeros differ: the bits differ, the values do not; the relative difference of two
  // arrays of zeros is 0 (guarded, not 0/0).
  const TensorDifference zeros = diff({0.0f, 0.0f}, {-0.0f, 0.0f});
  CHECK(zeros.differing == 1);
  CHECK(zeros.sign_flips == 0);
  CHECK(zeros.max_ulp_same_sign == 1);
  CHECK(zeros.max_abs == 0.0);
  CHECK(zeros.max_relative == 0.0);
  const TensorDifference equal = diff({0.0f, 0.0f}, {0.0f, 0.0f});
  CHECK(equal.differing == 0);
  CHECK(equal.max_relative == 0.0);
  CHECK(equal.max_ulp_same_sign == 0);
}

TEST_CASE("denormals: ULPs count from the bit patterns, a flip across them too",
          "[statistics][magnitude]") {
  // 3 * 2^-149 vs 2^-149: 2 ulp, |d| 2^-148, relative 2^-148 / (3 * 2^-149) = 2/3.
  const TensorDifference d = diff({float_of_bits(3)}, {float_of_bits(1)});
  CHECK(d.sign_flips == 0);
  CHECK(d.max_ulp_same_sign == 2);
  CHECK(d.max_abs == std::ldexp(1.0, -148));
  CHECK(d.max_relative == 2.0 / 3.0);
  // 2^-149 vs -2^-149: a flip of 3 ulp (to +0, to -0, to -2^-149); |d| 2^-148, relative 2.
  const TensorDifference flip = diff({float_of_bits(1)}, {-float_of_bits(1)});
  CHECK(flip.sign_flips == 1);
  CHECK(flip.max_ulp == 3);
  CHECK(flip.max_ulp_same_sign == 0);
  CHECK(flip.max_relative == 2.0);
}

TEST_CASE("NaN: counted as differing, never a flip, both ULP maxima saturate",
          "[statistics][magnitude]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // -NaN against 1: a NaN's sign is no sign. 2 vs 3 beside it: |d| 1, largest magnitude 3 (the
  // NaN is no magnitude), relative 1/3.
  const TensorDifference d = diff({-nan, 2.0f, 3.0f}, {1.0f, 3.0f, 3.0f});
  CHECK(d.differing == 2);
  CHECK(d.sign_flips == 0);
  CHECK(d.max_ulp == kMaxUlp);
  CHECK(d.max_ulp_same_sign == kMaxUlp);
  CHECK(d.max_abs == 1.0);
  CHECK(d.max_relative == 1.0 / 3.0);
  // Equal NaN bits are equal.
  const TensorDifference same = diff({nan, 1.0f}, {nan, 1.0f});
  CHECK(same.differing == 0);
  CHECK(same.max_ulp_same_sign == 0);
}

TEST_CASE("infinities: infinitely far in absolute and relative terms", "[statistics][magnitude]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float max = std::numeric_limits<float>::max();
  // inf vs the largest float: adjacent bit patterns (1 ulp), same sign, |d| infinite.
  const TensorDifference d = diff({inf, 1.0f}, {max, 1.0f});
  CHECK(d.sign_flips == 0);
  CHECK(d.max_ulp_same_sign == 1);
  CHECK(std::isinf(d.max_abs));
  CHECK(std::isinf(d.max_relative));
  // inf vs -inf: a flip; and against arrays otherwise all zero, relative stays infinite.
  const TensorDifference flip = diff({inf, 0.0f}, {-inf, 0.0f});
  CHECK(flip.sign_flips == 1);
  CHECK(flip.max_ulp_same_sign == 0);
  CHECK(std::isinf(flip.max_relative));
}

TEST_CASE("widest keeps the worst of each field, combined adds the counts",
          "[statistics][magnitude]") {
  TensorDifference a, b;
  a.differing = 5, a.sign_flips = 1, a.max_abs = 0.5, a.max_relative = 0.01, a.max_ulp = 900,
  a.max_ulp_same_sign = 3;
  b.differing = 2, b.sign_flips = 2, b.max_abs = 0.25, b.max_relative = 0.02, b.max_ulp = 7,
  b.max_ulp_same_sign = 7;
  const TensorDifference w = ra::compare::widest(a, b);
  CHECK(w.differing == 5);
  CHECK(w.sign_flips == 2);
  CHECK(w.max_abs == 0.5);
  CHECK(w.max_relative == 0.02);
  CHECK(w.max_ulp == 900);
  CHECK(w.max_ulp_same_sign == 7);
  const TensorDifference c = ra::compare::combined(a, b);
  CHECK(c.differing == 7);
  CHECK(c.sign_flips == 3);
  CHECK(c.max_ulp_same_sign == 7);
  CHECK(c.max_relative == 0.02);
}
