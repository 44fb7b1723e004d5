// Activations and dropout beyond the op table (tests/ops checks every one against the
// reference): hand-checked values, gradients against central differences, aliasing, and
// dropout's mask as a pure function of (key, draw, element).
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::Activation;

namespace {

const Activation kActivations[] = {Activation::none, Activation::relu, Activation::tanh,
                                   Activation::sigmoid};

// 40000 elements: three blocks of the elementwise loop, the last one partial.
constexpr std::size_t kCount = 40000;

std::vector<float> inputs_with_extremes(std::uint32_t seed) {
  auto x = test::random_values(kCount, seed, -6.0f, 6.0f);
  // Saturation and overflow territory for exp: sigmoid must stay finite and in [0, 1].
  const float extremes[] = {0.0f,   -0.0f,  20.0f,   -20.0f, 88.0f,
                            -88.0f, 100.0f, -100.0f, 1e30f,  -1e30f};
  std::copy(std::begin(extremes), std::end(extremes), x.begin());
  return x;
}

}  // namespace

TEST_CASE("activation forward matches the reference", "[backend][elementwise]") {
  const auto x = inputs_with_extremes(1);
  ra::backend::cpu::CpuOps one(1), seven(7);
  for (const Activation act : kActivations) {
    INFO(ra::backend::to_string(act));
    std::vector<float> y(kCount), y7(kCount), expected(kCount);
    one.activation_forward(act, kCount, x.data(), y.data());
    seven.activation_forward(act, kCount, x.data(), y7.data());
    ref::activation_forward(act, kCount, x.data(), expected.data());
    REQUIRE(test::same_bits(y, y7));
    if (act == Activation::none || act == Activation::relu) {
      REQUIRE(y == expected);  // no arithmetic
    } else {
      // Float exp/tanh (libm, < 2 ulp) plus at most two roundings: 8 u relative; the absolute
      // term admits subnormal results (sigmoid(-100) ~ 4e-44) whose relative precision is lower.
      REQUIRE_CLOSE(y, expected, 8 * test::kUnitRoundoff, 1e-38, nullptr);
    }
    for (float v : y) REQUIRE(std::isfinite(v));
  }
  // Hand-checked values.
  const std::vector<float> xs{-2.0f, 0.0f, 3.0f};
  std::vector<float> ys(3);
  one.activation_forward(Activation::relu, 3, xs.data(), ys.data());
  REQUIRE(ys == std::vector<float>{0.0f, 0.0f, 3.0f});
  one.activation_forward(Activation::sigmoid, 3, xs.data(), ys.data());
  REQUIRE(ys[1] == 0.5f);
  REQUIRE(ys[0] == Approx(0.11920292202).epsilon(1e-6));  // 1 / (1 + e^2)
  REQUIRE(ys[2] == Approx(0.95257412682).epsilon(1e-6));  // 1 / (1 + e^-3)
  one.activation_forward(Activation::tanh, 3, xs.data(), ys.data());
  REQUIRE(ys[0] == Approx(-0.96402758007).epsilon(1e-6));
}

TEST_CASE("activations may work in place", "[backend][elementwise]") {
  const auto x = inputs_with_extremes(4);
  const auto dy = test::random_values(kCount, 5);
  ra::backend::cpu::CpuOps ops(2);
  for (const Activation act : kActivations) {
    INFO(ra::backend::to_string(act));
    std::vector<float> y(kCount), inplace = x, dx(kCount), dx_inplace = dy;
    ops.activation_forward(act, kCount, x.data(), y.data());
    ops.activation_forward(act, kCount, inplace.data(), inplace.data());
    REQUIRE(test::same_bits(y, inplace));
    ops.activation_backward(act, kCount, y.data(), dy.data(), dx.data());
    ops.activation_backward(act, kCount, y.data(), dx_inplace.data(), dx_inplace.data());
    REQUIRE(test::same_bits(dx, dx_inplace));
  }
}

TEST_CASE("activation gradients match central differences", "[backend][elementwise][gradient]") {
  // L = sum(act(x) * r) in double, h = 1e-4: truncation h^2 |f'''| / 6 < 1e-8, rounding ~1e-12.
  // The fast backward works from the float forward output y: its relative error ~ 1e-7 / (1 - y^2)
  // for tanh stays below 1e-6 with |x| <= 2 (1 - y^2 >= 0.07). relu inputs keep |x| >= 0.05 > h,
  // away from the kink.
  const std::size_t count = 300;
  auto xf = test::random_values(count, 6, -2.0f, 2.0f);
  for (float& v : xf) {
    if (std::abs(v) < 0.05f) v = v < 0 ? -0.05f : 0.05f;
  }
  const auto r = test::random_values(count, 7);
  const std::vector<double> rd = test::to_double(r);
  ra::backend::cpu::CpuOps ops(2);
  for (const Activation act : kActivations) {
    INFO(ra::backend::to_string(act));
    std::vector<double> x = test::to_double(xf);
    auto objective = [&] {
      std::vector<double> y(count);
      ref::activation_forward(act, count, x.data(), y.data());
      return std::inner_product(y.begin(), y.end(), rd.begin(), 0.0);
    };
    const auto numeric = ra::backend::central_differences(x, 1e-4, objective);
    std::vector<float> y(count), dx(count);
    ops.activation_forward(act, count, xf.data(), y.data());
    ops.activation_backward(act, count, y.data(), r.data(), dx.data());
    const auto check = ra::backend::compare_gradients(dx, numeric, 1e-5, 1e-6);
    INFO(check.describe());
    REQUIRE(check.ok);
  }
}

// ---- dropout ---------------------------------------------------------------------------------

namespace {

constexpr ra::rng::PhiloxKey kKey{0x1234u, 0xABCDu};

std::uint32_t threshold_of(double rate) {
  return static_cast<std::uint32_t>(std::llround(rate * 16777216.0));
}

}  // namespace

TEST_CASE("dropout mask is a pure function of key, draw and element", "[backend][dropout]") {
  const std::size_t count = 100003;  // not a multiple of 4 or of the block size
  const auto x = test::random_values(count, 8);
  const float scale = 1.0f / (1.0f - 0.25f);
  auto run = [&](ra::backend::Ops& ops, ra::rng::PhiloxKey key, std::uint64_t draw) {
    std::vector<float> y(count);
    std::vector<std::uint8_t> mask(count, 7);
    ops.dropout_forward(count, threshold_of(0.25), scale, key, draw, x.data(), y.data(),
                        mask.data());
    return std::pair{y, mask};
  };
  ra::backend::cpu::CpuOps one(1), seven(7);
  const auto [y1, mask1] = run(one, kKey, 5);
  const auto [y7, mask7] = run(seven, kKey, 5);
  REQUIRE(test::same_bits(y1, y7));
  REQUIRE(mask1 == mask7);
  REQUIRE(run(one, kKey, 5).second == mask1);  // repeatable

  // The reference draws element i as philox_word(key, i, draw), one call per element.
  std::vector<float> y_ref(count);
  std::vector<std::uint8_t> mask_ref(count);
  ref::dropout_forward(count, threshold_of(0.25), scale, kKey, 5, x.data(), y_ref.data(),
                       mask_ref.data());
  REQUIRE(mask_ref == mask1);
  REQUIRE(test::same_bits(y_ref, y1));

  // Another draw (the next step) or another key (another layer or seed) gives another mask:
  // two independent masks agree on 0.75^2 + 0.25^2 = 62.5% of the elements.
  for (const auto& other : {run(one, kKey, 6).second, run(one, {0x1235u, 0xABCDu}, 5).second}) {
    std::size_t same = 0;
    for (std::size_t i = 0; i < count; ++i) same += other[i] == mask1[i];
    REQUIRE(double(same) / count == Approx(0.625).margin(0.01));
  }

  // Keep fraction ~ 1 - rate: the standard deviation over 100k elements is
  // sqrt(0.75 * 0.25 / 1e5) = 0.0014; 0.007 is five of them.
  const double kept = double(std::count(mask1.begin(), mask1.end(), 1)) / count;
  REQUIRE(kept == Approx(0.75).margin(0.007));
  // Scaling is exact: kept elements are x * scale in float, dropped ones exactly 0.
  for (std::size_t i = 0; i < count; ++i) {
    REQUIRE(mask1[i] <= 1);
    REQUIRE(y1[i] == (mask1[i] ? x[i] * scale : 0.0f));
  }
}

TEST_CASE("dropout keep rule at its thresholds", "[backend][dropout]") {
  const std::size_t count = 1000;
  const auto x = test::random_values(count, 9);
  ra::backend::cpu::CpuOps ops(2);
  std::vector<float> y(count);
  std::vector<std::uint8_t> mask(count);
  // Threshold 0 keeps everything (bits >> 8 >= 0 always); scale 1 then gives y == x.
  ops.dropout_forward(count, 0, 1.0f, kKey, 1, x.data(), y.data(), mask.data());
  REQUIRE(y == x);
  REQUIRE(std::count(mask.begin(), mask.end(), 1) == std::ptrdiff_t(count));
  // Element i is kept exactly when its 24-bit draw reaches the threshold.
  const std::uint32_t threshold = threshold_of(0.5);
  ops.dropout_forward(count, threshold, 2.0f, kKey, 1, x.data(), y.data(), mask.data());
  for (std::size_t i = 0; i < count; ++i) {
    const bool keep = (ra::rng::philox_word(kKey, i, 1) >> 8) >= threshold;
    REQUIRE(mask[i] == (keep ? 1 : 0));
  }
}

TEST_CASE("dropout backward and its gradient check", "[backend][dropout][gradient]") {
  const std::size_t count = 257;
  const float rate = 0.4f, scale = 1.0f / (1.0f - rate);
  const auto xf = test::random_values(count, 10);
  const auto r = test::random_values(count, 11);
  ra::backend::cpu::CpuOps ops(2);
  std::vector<float> y(count), dx(count), in_place = r;
  std::vector<std::uint8_t> mask(count);
  ops.dropout_forward(count, threshold_of(rate), scale, kKey, 3, xf.data(), y.data(), mask.data());
  ops.dropout_backward(count, scale, mask.data(), r.data(), dx.data());
  for (std::size_t i = 0; i < count; ++i) REQUIRE(dx[i] == (mask[i] ? r[i] * scale : 0.0f));
  ops.dropout_backward(count, scale, mask.data(), in_place.data(), in_place.data());
  REQUIRE(test::same_bits(in_place, dx));
  // L = sum(dropout(x) * r) with the mask fixed by (key, draw): linear, so exact differences.
  std::vector<double> x = test::to_double(xf);
  const std::vector<double> rd = test::to_double(r);
  auto objective = [&] {
    std::vector<double> yd(count);
    std::vector<std::uint8_t> m(count);
    ref::dropout_forward<double>(count, threshold_of(rate), scale, kKey, 3, x.data(), yd.data(),
                                 m.data());
    return std::inner_product(yd.begin(), yd.end(), rd.begin(), 0.0);
  };
  const auto numeric = ra::backend::central_differences(x, 1e-2, objective);
  const auto check = ra::backend::compare_gradients(dx, numeric, 1e-6, 1e-7);
  INFO(check.describe());
  REQUIRE(check.ok);
}
