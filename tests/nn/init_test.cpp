// Weight initializers (nn/init.h): exact reproducibility, addressing by element, Keras bounds and
// moments, truncation of he_normal with redraws addressed by attempt.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include "nn/init.h"
#include "rng/philox.h"
#include "rng/stream.h"

namespace {

using ra::Tensor;
using ra::rng::PhiloxKey;
using ra::spec::Initializer;

struct Moments {
  double mean = 0, stddev = 0, max_abs = 0;
};

Moments moments_of(const Tensor& t) {
  double sum = 0, sum_sq = 0, max_abs = 0;
  for (float x : t) {
    sum += x;
    sum_sq += static_cast<double>(x) * x;
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
  }
  const double n = static_cast<double>(t.size());
  const double mean = sum / n;
  return {mean, std::sqrt(sum_sq / n - mean * mean), max_abs};
}

std::size_t equal_elements(const Tensor& a, const Tensor& b) {
  std::size_t equal = 0;
  for (std::size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i];
  return equal;
}

const PhiloxKey kKey = ra::rng::derive_key(42, ra::rng::init_stream("conv2d_0.weight"));

}  // namespace

TEST_CASE("zeros fills zeros", "[init]") {
  Tensor t({4, 3}, 7.0f);
  ra::nn::initialize(t, Initializer::zeros, 0, 0, kKey);  // fans are not needed
  for (float x : t) REQUIRE(x == 0.0f);
}

TEST_CASE("initializers are reproducible and address draws by element", "[init]") {
  for (Initializer kind : {Initializer::glorot_uniform, Initializer::he_normal}) {
    INFO("initializer " << static_cast<int>(kind));
    Tensor a({32, 1, 3, 3}), b({32, 1, 3, 3});
    ra::nn::initialize(a, kind, 9, 288, kKey);
    ra::nn::initialize(b, kind, 9, 288, kKey);
    REQUIRE(ra::bitwise_equal(a, b));

    // Element i does not depend on the tensor's size: the first 288 elements of a larger tensor
    // with the same key and fans are the same bits.
    Tensor larger({1000});
    ra::nn::initialize(larger, kind, 9, 288, kKey);
    for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(larger[i] == a[i]);

    // Another stream key gives other values (equal floats by chance: about 1 in 2^24 each).
    Tensor other({32, 1, 3, 3});
    ra::nn::initialize(other, kind, 9, 288,
                       ra::rng::derive_key(42, ra::rng::init_stream("conv2d_1.weight")));
    REQUIRE(equal_elements(a, other) <= 1);
    ra::nn::initialize(other, kind, 9, 288,
                       ra::rng::derive_key(43, ra::rng::init_stream("conv2d_0.weight")));
    REQUIRE(equal_elements(a, other) <= 1);
  }
}

TEST_CASE("glorot_uniform: uniform on -limit <= w < limit, limit = sqrt(6 / (fan_in + fan_out))",
          "[init]") {
  // A dense [300, 200] kernel: fan_in = 200, fan_out = 300, limit = sqrt(6 / 500) = 0.109545.
  Tensor t({300, 200});
  ra::nn::initialize(t, Initializer::glorot_uniform, 200, 300, kKey);
  const double limit = std::sqrt(6.0 / 500.0);

  // Element 7 by hand: word 3 of block (a = 1, b = 0); u = (w >> 8) / 2^24; x = (2u - 1) limit.
  const std::uint32_t w = ra::rng::philox4x32_10(1, 0, 0, 0, kKey).v[3];
  const double u = static_cast<double>(w >> 8) / 16777216.0;
  REQUIRE(t[7] == static_cast<float>((2.0 * u - 1.0) * limit));

  for (float x : t) {
    REQUIRE(x >= -static_cast<float>(limit));
    REQUIRE(x < static_cast<float>(limit));
  }
  // n = 60000; U(-L, L) has stddev L / sqrt(3) = 0.063246. Mean within 5 * 0.063246 /
  // sqrt(60000) = 0.0013; the stddev estimate has relative error ~ sqrt(0.8 / (4n)) = 0.18%, so
  // 1% is > 5 sigma. The extremes come within 0.1% of the limit (P(miss) = 0.999^60000 ~ 1e-26).
  const Moments m = moments_of(t);
  CHECK(std::fabs(m.mean) < 0.0013);
  CHECK(m.stddev == Approx(limit / std::sqrt(3.0)).epsilon(0.01));
  CHECK(m.max_abs > 0.999 * limit);
}

TEST_CASE("he_normal: Keras truncated normal, stddev sqrt(2 / fan_in) after truncation", "[init]") {
  // A conv [64, 8, 5, 5] kernel: fan_in = 200, target stddev sqrt(2 / 200) = 0.1; the normal
  // drawn from has sigma = 0.1 / 0.87962566103423978 = 0.113685 and is cut at 2 sigma = 0.227370.
  Tensor t({64, 8, 5, 5});
  const std::int64_t fan_in = 8 * 5 * 5, fan_out = 64 * 5 * 5;
  ra::nn::initialize(t, Initializer::he_normal, fan_in, fan_out, kKey);
  const double sigma = std::sqrt(2.0 / 200.0) / 0.87962566103423978;
  const float bound = static_cast<float>(2.0 * sigma);

  for (float x : t) REQUIRE(std::fabs(x) <= bound);
  // n = 12800. Mean within 5 * 0.1 / sqrt(n) = 0.0044. A truncated-at-2 normal has kurtosis
  // 2.36, so the stddev estimate's relative error is ~ sqrt((2.36 - 1) / (4n)) = 0.52%: 3% is
  // > 5 sigma. Truncation is not tighter than 2 sigma: the largest |x| is near the cut
  // (P(no |z| in [1.9, 2]) = (1 - 0.0132 / 0.9545)^12800 ~ 1e-77).
  const Moments m = moments_of(t);
  CHECK(std::fabs(m.mean) < 0.0044);
  CHECK(m.stddev == Approx(0.1).epsilon(0.03));
  CHECK(m.max_abs > 0.95 * bound);

  // Redraws are addressed by (element, attempt): rebuild each element independently from the
  // Box-Muller words 2i, 2i+1 of draw b = 0, 1, ... and take the first |z| <= 2.
  int redrawn = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    for (std::uint64_t attempt = 0;; ++attempt) {
      const float z = ra::rng::standard_normal(ra::rng::philox_word(kKey, 2 * i, attempt),
                                               ra::rng::philox_word(kKey, 2 * i + 1, attempt));
      if (std::fabs(z) <= 2.0f) {
        REQUIRE(t[i] == static_cast<float>(sigma * z));
        break;
      }
      REQUIRE(attempt < 10);
      ++redrawn;
    }
  }
  // About 4.55% of 12800 = 582 redraws (sigma 24): the truncation path is exercised.
  CHECK(redrawn > 450);
  CHECK(redrawn < 720);
}

TEST_CASE("initializers reject fans they cannot use", "[init]") {
  Tensor t({2, 2});
  CHECK_THROWS_AS(ra::nn::initialize(t, Initializer::glorot_uniform, 0, 4, kKey),
                  std::invalid_argument);
  CHECK_THROWS_AS(ra::nn::initialize(t, Initializer::he_normal, 0, 4, kKey), std::invalid_argument);
}
