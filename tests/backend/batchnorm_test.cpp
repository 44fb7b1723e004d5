// Batch normalisation beyond the op table (tests/ops checks every op against the reference at
// every instruction set and thread count): its gradients against central differences of the
// double reference, PyTorch's rules for the statistics on a hand case, the per-plane kernels
// bit for bit at every instruction set, and in-place use.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/norm/channel_kernels.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::ChannelGeometry;
using ra::backend::KernelMode;

namespace {

constexpr float kMomentum = 0.1f, kEpsilon = 1e-3f;

struct BatchNormInputs {
  std::vector<float> x, gamma, beta, r;
};

BatchNormInputs batchnorm_inputs(const ChannelGeometry& g) {
  return {test::random_values(g.x_size(), 11), test::random_values(g.c, 12, 0.5f, 1.5f),
          test::random_values(g.c, 13), test::random_values(g.x_size(), 14)};
}

// L = sum(y * r) of the training forward in double: x, gamma and beta are `values`' thirds.
double batchnorm_objective(const ChannelGeometry& g, const std::vector<double>& x,
                           const std::vector<double>& gamma, const std::vector<double>& beta,
                           const std::vector<double>& r) {
  std::vector<double> y(g.x_size()), rm(g.c), rv(g.c, 1.0), mean(g.c), inv_std(g.c);
  ref::batchnorm_forward_training<double>(g, x.data(), gamma.data(), beta.data(), kMomentum,
                                          kEpsilon, rm.data(), rv.data(), mean.data(),
                                          inv_std.data(), y.data());
  return std::inner_product(y.begin(), y.end(), r.begin(), 0.0);
}

}  // namespace

TEST_CASE("batchnorm gradients match central differences", "[backend][batchnorm][gradient]") {
  for (const ChannelGeometry g : {ChannelGeometry{3, 2, 4, 5}, ChannelGeometry{2, 3, 1, 1}}) {
    INFO(g.n << "x" << g.c << "x" << g.h << "x" << g.w);
    const BatchNormInputs in = batchnorm_inputs(g);
    std::vector<double> x = test::to_double(in.x), gamma = test::to_double(in.gamma),
                        beta = test::to_double(in.beta);
    const std::vector<double> r = test::to_double(in.r);
    const auto objective = [&] { return batchnorm_objective(g, x, gamma, beta, r); };
    const auto numeric_dx = ra::backend::central_differences(x, 1e-4, objective);
    const auto numeric_dgamma = ra::backend::central_differences(gamma, 1e-4, objective);
    const auto numeric_dbeta = ra::backend::central_differences(beta, 1e-4, objective);
    ra::backend::cpu::CpuOps ops(2);
    for (const KernelMode mode : test::kModes) {
      std::vector<float> y(g.x_size()), rm(g.c), rv(g.c, 1.0f), mean(g.c), inv_std(g.c);
      ops.batchnorm_forward_training(g, in.x.data(), in.gamma.data(), in.beta.data(), kMomentum,
                                     kEpsilon, rm.data(), rv.data(), mean.data(), inv_std.data(),
                                     y.data(), mode);
      std::vector<float> dx(g.x_size()), dgamma(g.c), dbeta(g.c);
      ops.batchnorm_backward(g, in.x.data(), in.r.data(), in.gamma.data(), mean.data(),
                             inv_std.data(), dx.data(), dgamma.data(), dbeta.data(), mode);
      for (const auto& [analytic, numeric, name] :
           {std::tuple{&dx, &numeric_dx, "dx"}, std::tuple{&dgamma, &numeric_dgamma, "dgamma"},
            std::tuple{&dbeta, &numeric_dbeta, "dbeta"}}) {
        const auto check = ra::backend::compare_gradients(*analytic, *numeric, 1e-4, 1e-5);
        INFO(name << ", mode " << ra::backend::to_string(mode) << ": " << check.describe());
        REQUIRE(check.ok);
      }
    }
  }
}

TEST_CASE("batchnorm statistics follow PyTorch's rules on a hand case", "[backend][batchnorm]") {
  // One channel, x = {1, 2, 3, 6} over two images of two pixels: mean 3, biased variance
  // (4 + 1 + 0 + 9) / 4 = 3.5, unbiased 14 / 3. Epsilon 0.5 makes inv_std 1/2 exactly.
  const ChannelGeometry g{2, 1, 1, 2};
  const std::vector<float> x{1, 2, 3, 6}, gamma{2}, beta{1};
  std::vector<float> y(4), rm{1}, rv{2}, mean(1), inv_std(1);
  ra::backend::cpu::CpuOps ops(3);
  ops.batchnorm_forward_training(g, x.data(), gamma.data(), beta.data(), 0.25f, 0.5f, rm.data(),
                                 rv.data(), mean.data(), inv_std.data(), y.data(),
                                 KernelMode::deterministic);
  REQUIRE(mean[0] == 3.0f);
  REQUIRE(inv_std[0] == 0.5f);
  REQUIRE(y == std::vector<float>{-1, 0, 1, 4});  // (x - 3) * 0.5 * 2 + 1
  REQUIRE(rm[0] == 1.5f);                         // 0.75 * 1 + 0.25 * 3
  REQUIRE(rv[0] == Approx(0.75 * 2 + 0.25 * 14.0 / 3).epsilon(1e-7));
  // Inference with those running statistics: scale 2 / sqrt(rv + 0.5).
  std::vector<float> y_inference(4);
  ops.batchnorm_forward_inference(g, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                                  0.5f, y_inference.data());
  for (int i = 0; i < 4; ++i) {
    REQUIRE(y_inference[i] ==
            Approx((x[i] - 1.5) * 2 / std::sqrt(double(rv[0]) + 0.5) + 1).epsilon(1e-6));
  }
}

TEST_CASE("the per-plane kernels give the same bits at every instruction set",
          "[backend][batchnorm]") {
  using ra::backend::cpu::channel_kernels;
  using ra::backend::cpu::Isa;
  const auto x = test::random_values(1000, 21, 2.0f, 6.0f), dy = test::random_values(1000, 22);
  const auto& portable = channel_kernels(Isa::portable);
  for (const Isa isa : test::supported_isas()) {
    INFO(ra::backend::cpu::isa_name(isa));
    const auto& k = channel_kernels(isa);
    for (const std::int64_t count : {1, 15, 16, 17, 1000}) {
      INFO(count << " elements");
      REQUIRE(std::bit_cast<std::uint32_t>(k.sum(x.data(), count)) ==
              std::bit_cast<std::uint32_t>(portable.sum(x.data(), count)));
      REQUIRE(std::bit_cast<std::uint32_t>(k.centered_square_sum(x.data(), count, 4.0f)) ==
              std::bit_cast<std::uint32_t>(portable.centered_square_sum(x.data(), count, 4.0f)));
      float a[2], b[2];
      k.centered_dot(x.data(), dy.data(), count, 4.0f, a, a + 1);
      portable.centered_dot(x.data(), dy.data(), count, 4.0f, b, b + 1);
      REQUIRE(std::memcmp(a, b, sizeof a) == 0);
      // The pairs: each plane's value as the single-plane kernel's, bit for bit.
      const float sums[2] = {portable.sum(x.data(), count), portable.sum(dy.data(), count)};
      k.sum_pair(x.data(), dy.data(), count, a);
      REQUIRE(std::memcmp(a, sums, sizeof a) == 0);
      const float squares[2] = {portable.centered_square_sum(x.data(), count, 4.0f),
                                portable.centered_square_sum(dy.data(), count, -0.5f)};
      k.centered_square_sum_pair(x.data(), dy.data(), count, 4.0f, -0.5f, a);
      REQUIRE(std::memcmp(a, squares, sizeof a) == 0);
      std::vector<float> out(count), expected(count);
      k.normalize_backward(x.data(), dy.data(), count, 4.0f, 0.1f, 0.3f, 1.7f, out.data());
      portable.normalize_backward(x.data(), dy.data(), count, 4.0f, 0.1f, 0.3f, 1.7f,
                                  expected.data());
      REQUIRE(test::same_bits(out, expected));
      // normalize_backward_add: normalize_backward's values, then the add, bit for bit.
      const auto addend = test::random_values(count, 23);
      k.normalize_backward_add(x.data(), dy.data(), count, 4.0f, 0.1f, 0.3f, 1.7f, addend.data(),
                               out.data());
      for (std::int64_t i = 0; i < count; ++i) expected[i] += addend[i];
      REQUIRE(test::same_bits(out, expected));
      // normalize_relu: normalize's values, then the relu of activation_forward, bit for bit.
      k.normalize_relu(dy.data(), count, 0.2f, 1.3f, -0.1f, out.data());
      portable.normalize(dy.data(), count, 0.2f, 1.3f, -0.1f, expected.data());
      ra::backend::cpu::activate(ra::backend::Activation::relu, expected.data(), expected.data(),
                                 count);
      REQUIRE(test::same_bits(out, expected));
    }
  }
  // The lane order, by a sum whose rounding shows it: 1 in lane 0 and 2^-24 in lanes 1 to 15.
  // Left to right, each 1 + 2^-24 rounds back to 1 (a tie, to even). The lanes' tree adds lane
  // l + 8 into l: lane 0 = 1 + 2^-24 -> 1, lanes 1-7 = 2^-23; then l + 4: lane 0 = 1 + 2^-23,
  // lanes 1-3 = 2^-22; then l + 2: lane 0 = 1 + 3 2^-23, lane 1 = 2^-21; then 1 + 7 2^-23, exact.
  std::vector<float> terms(16, 0x1p-24f);
  terms[0] = 1.0f;
  REQUIRE(portable.sum(terms.data(), 16) == 1.0f + 7 * 0x1p-23f);
}

TEST_CASE("batchnorm backward may write dx over dy", "[backend][batchnorm]") {
  const ChannelGeometry g{4, 3, 5, 7};
  const BatchNormInputs in = batchnorm_inputs(g);
  ra::backend::cpu::CpuOps ops(2);
  std::vector<float> y(g.x_size()), rm(g.c), rv(g.c, 1.0f), mean(g.c), inv_std(g.c);
  ops.batchnorm_forward_training(g, in.x.data(), in.gamma.data(), in.beta.data(), kMomentum,
                                 kEpsilon, rm.data(), rv.data(), mean.data(), inv_std.data(),
                                 y.data(), KernelMode::deterministic);
  std::vector<float> dx(g.x_size()), in_place = in.r, dgamma(g.c), dbeta(g.c);
  ops.batchnorm_backward(g, in.x.data(), in.r.data(), in.gamma.data(), mean.data(), inv_std.data(),
                         dx.data(), dgamma.data(), dbeta.data(), KernelMode::deterministic);
  ops.batchnorm_backward(g, in.x.data(), in_place.data(), in.gamma.data(), mean.data(),
                         inv_std.data(), in_place.data(), dgamma.data(), dbeta.data(),
                         KernelMode::deterministic);
  REQUIRE(test::same_bits(dx, in_place));
}
