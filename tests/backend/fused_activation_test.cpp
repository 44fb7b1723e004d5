// conv2d_forward and dense_forward apply bias and activation as they store (ops.h): the result must
// be bitwise the unfused sequence -- the op without activation, then activation_forward -- for
// every activation, with and without bias, for stride-1 (pixel tiles) and strided (gathered
// tiles) convolutions.
#include <catch2/catch.hpp>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend_test_util.h"

using namespace ra::backend;

namespace {

const Activation kFusedActivations[] = {Activation::none, Activation::relu, Activation::tanh,
                                        Activation::sigmoid};

}  // namespace

TEST_CASE("fused conv bias + activation equals the separate activation pass bit for bit",
          "[conv][fused]") {
  CpuOps ops(2);
  // Rows of 8 pixels (avx2-fma: row-vector tiles), strided, and a 1x1 whose wide rows discard
  // nothing (avx2-fma: dense storing tiles).
  const ConvGeometry cases[] = {test::conv(2, 3, 9, 8, 70, 3, 3, 1, 1, 1, 1, 1, 1),
                                test::conv(2, 3, 9, 8, 5, 3, 3, 2, 2),
                                test::conv(2, 3, 8, 8, 70, 1, 1)};
  for (const ConvGeometry& g : cases) {
    const auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 41, -3.0f, 3.0f);
    const auto w = test::random_values(static_cast<std::size_t>(g.w_size()), 42);
    const auto b = test::random_values(static_cast<std::size_t>(g.k), 43);
    for (const bool with_bias : {true, false}) {
      for (const Activation act : kFusedActivations) {
        INFO("stride " << g.stride_h << ", bias " << with_bias << ", "
                       << ra::backend::to_string(act));
        const float* bias = with_bias ? b.data() : nullptr;
        std::vector<float> fused(g.y_size(), -1.0f), separate(g.y_size(), -1.0f);
        ops.conv2d_forward(g, x.data(), w.data(), bias, act, fused.data());
        ops.conv2d_forward(g, x.data(), w.data(), bias, Activation::none, separate.data());
        ops.activation_forward(act, g.y_size(), separate.data(), separate.data());
        REQUIRE(test::same_bits(fused, separate));
      }
    }
  }
}

TEST_CASE("fused dense bias + activation equals the separate activation pass bit for bit",
          "[dense][fused]") {
  CpuOps ops(2);
  const DenseGeometry g{5, 37, 19};
  const auto x = test::random_values(std::size_t(g.n) * g.in, 51, -3.0f, 3.0f);
  const auto w = test::random_values(std::size_t(g.out) * g.in, 52);
  const auto b = test::random_values(std::size_t(g.out), 53);
  for (const bool with_bias : {true, false}) {
    for (const Activation act : kFusedActivations) {
      INFO("bias " << with_bias << ", " << ra::backend::to_string(act));
      const float* bias = with_bias ? b.data() : nullptr;
      std::vector<float> fused(std::size_t(g.n) * g.out, -1.0f), separate(fused.size(), -1.0f);
      ops.dense_forward(g, x.data(), w.data(), bias, act, fused.data());
      ops.dense_forward(g, x.data(), w.data(), bias, Activation::none, separate.data());
      ops.activation_forward(act, std::int64_t(separate.size()), separate.data(), separate.data());
      REQUIRE(test::same_bits(fused, separate));
    }
  }
}

TEST_CASE("conv backward data with a relu gate equals the op then relu backward", "[conv][fused]") {
  // The gate is the conv's input x, a relu output (zeros included). Stride 1 takes the direct
  // pixel path (gated as it stores), stride 2 the GEMM + col2im path (gated in a pass of its own),
  // the strided 1x1 its subsampled twin (also gated in a pass of its own).
  CpuOps ops(2);
  const ConvGeometry cases[] = {
      test::conv(3, 5, 9, 8, 7, 3, 3, 1, 1, 1, 1, 1, 1), test::conv(3, 5, 9, 8, 7, 3, 3, 2, 2),
      test::conv(3, 5, 8, 8, 7, 1, 1), test::conv(3, 5, 8, 8, 7, 1, 1, 2, 2)};
  for (const ConvGeometry& g : cases) {
    auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 81);
    for (float& v : x) v = v > 0.0f ? v : 0.0f;
    const auto w = test::random_values(static_cast<std::size_t>(g.w_size()), 82);
    const auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 83);
    for (const ra::backend::KernelMode mode :
         {ra::backend::KernelMode::deterministic, ra::backend::KernelMode::nondeterministic}) {
      INFO("stride " << g.stride_h << ", mode " << ra::backend::to_string(mode));
      std::vector<float> gated(g.x_size(), -1.0f), separate(g.x_size(), -1.0f);
      ops.conv2d_backward_data(g, dy.data(), w.data(), x.data(), gated.data(), mode);
      ops.conv2d_backward_data(g, dy.data(), w.data(), nullptr, separate.data(), mode);
      ops.activation_backward(Activation::relu, g.x_size(), x.data(), separate.data(),
                              separate.data());
      if (mode == ra::backend::KernelMode::deterministic) {
        REQUIRE(test::same_bits(gated, separate));
      } else {  // atomic adds: the two calls may add in other orders
        REQUIRE_CLOSE(gated, separate, 64 * test::kUnitRoundoff, 1e-6, nullptr);
      }
    }
  }
}
