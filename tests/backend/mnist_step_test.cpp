// One full training step of the Keras MNIST convnet (conv 1->32 k3 relu, conv 32->64 k3 relu,
// maxpool 2, dense 9216->128 relu, dense 128->10, softmax cross-entropy) at real layer sizes:
// deterministic mode must give the same loss and gradients, bit for bit, on 1 and 2 threads.
// The hidden [.bench] case times the step at batch 128 (run: test_backend "[bench]").
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>

#include "backend/cpu/cpu_ops.h"
#include "backend_test_util.h"

using ra::backend::Activation;
using ra::backend::KernelMode;
using ra::backend::Ops;

namespace {

struct MnistStep {
  int batch;
  ra::backend::ConvGeometry conv1, conv2;
  ra::backend::PoolGeometry pool;
  ra::backend::DenseGeometry dense1, dense2;
  std::vector<float> x, w1, b1, w2, b2, w3, b3, w4, b4;
  std::vector<std::int32_t> labels;
  // activations and gradients
  std::vector<float> y1, y2, y3, y4, y5, d5, d4, d3, d2, d1;
  std::vector<float> g_w1, g_b1, g_w2, g_b2, g_w3, g_b3, g_w4, g_b4;
  std::vector<std::int32_t> argmax;

  explicit MnistStep(int n)
      : batch(n),
        conv1(test::conv(n, 1, 28, 28, 32, 3, 3)),
        conv2(test::conv(n, 32, 26, 26, 64, 3, 3)),
        pool(test::pool(n, 64, 24, 24, 2, 2, 2, 2)),
        dense1{n, 9216, 128},
        dense2{n, 128, 10} {
    x = test::random_values(conv1.x_size(), 1, 0.0f, 1.0f);
    w1 = test::random_values(conv1.w_size(), 2, -0.3f, 0.3f);
    b1 = test::random_values(32, 3, -0.1f, 0.1f);
    w2 = test::random_values(conv2.w_size(), 4, -0.08f, 0.08f);
    b2 = test::random_values(64, 5, -0.1f, 0.1f);
    w3 = test::random_values(9216 * 128, 6, -0.025f, 0.025f);
    b3 = test::random_values(128, 7, -0.1f, 0.1f);
    w4 = test::random_values(128 * 10, 8, -0.2f, 0.2f);
    b4 = test::random_values(10, 9, -0.1f, 0.1f);
    for (int i = 0; i < n; ++i) labels.push_back(i % 10);
    y1.resize(conv1.y_size()), y2.resize(conv2.y_size()), y3.resize(pool.y_size());
    y4.resize(std::size_t(n) * 128), y5.resize(std::size_t(n) * 10);
    d5 = y5, d4 = y4, d3 = y3, d2 = y2, d1 = y1;
    argmax.resize(pool.y_size());
    g_w1 = w1, g_b1 = b1, g_w2 = w2, g_b2 = b2, g_w3 = w3, g_b3 = b3, g_w4 = w4, g_b4 = b4;
  }

  // Forward and backward; returns the loss. d1 (the input gradient) is not needed, as in training.
  float run(Ops& ops, KernelMode mode) {
    ops.conv2d_forward(conv1, x.data(), w1.data(), b1.data(), ra::backend::Activation::none,
                       y1.data());
    ops.activation_forward(Activation::relu, y1.size(), y1.data(), y1.data());
    ops.conv2d_forward(conv2, y1.data(), w2.data(), b2.data(), ra::backend::Activation::none,
                       y2.data());
    ops.activation_forward(Activation::relu, y2.size(), y2.data(), y2.data());
    ops.maxpool2d_forward(pool, y2.data(), y3.data(), argmax.data());
    ops.dense_forward(dense1, y3.data(), w3.data(), b3.data(), ra::backend::Activation::none,
                      y4.data());
    ops.activation_forward(Activation::relu, y4.size(), y4.data(), y4.data());
    ops.dense_forward(dense2, y4.data(), w4.data(), b4.data(), ra::backend::Activation::none,
                      y5.data());
    const float loss =
        ops.softmax_cross_entropy(batch, 10, y5.data(), labels.data(), d5.data(), mode);
    ops.dense_backward_weight(dense2, y4.data(), d5.data(), g_w4.data(), mode);
    ops.dense_backward_bias(dense2, d5.data(), g_b4.data(), mode);
    ops.dense_backward_data(dense2, d5.data(), w4.data(), d4.data(), mode);
    ops.activation_backward(Activation::relu, d4.size(), y4.data(), d4.data(), d4.data());
    ops.dense_backward_weight(dense1, y3.data(), d4.data(), g_w3.data(), mode);
    ops.dense_backward_bias(dense1, d4.data(), g_b3.data(), mode);
    ops.dense_backward_data(dense1, d4.data(), w3.data(), d3.data(), mode);
    ops.maxpool2d_backward(pool, d3.data(), argmax.data(), nullptr, d2.data(), mode);
    ops.activation_backward(Activation::relu, d2.size(), y2.data(), d2.data(), d2.data());
    ops.conv2d_backward_filter(conv2, y1.data(), d2.data(), g_w2.data(), mode);
    ops.conv2d_backward_bias(conv2, d2.data(), g_b2.data(), mode);
    ops.conv2d_backward_data(conv2, d2.data(), w2.data(), nullptr, d1.data(), mode);
    ops.activation_backward(Activation::relu, d1.size(), y1.data(), d1.data(), d1.data());
    ops.conv2d_backward_filter(conv1, x.data(), d1.data(), g_w1.data(), mode);
    ops.conv2d_backward_bias(conv1, d1.data(), g_b1.data(), mode);
    return loss;
  }

  std::vector<float> gradients() const {
    std::vector<float> all;
    for (const auto* g : {&g_w1, &g_b1, &g_w2, &g_b2, &g_w3, &g_b3, &g_w4, &g_b4}) {
      all.insert(all.end(), g->begin(), g->end());
    }
    return all;
  }
};

}  // namespace

TEST_CASE("a Keras MNIST training step is bitwise identical on 1 and 2 threads",
          "[backend][determinism]") {
  MnistStep one(32), two(32);
  ra::backend::cpu::CpuOps ops1(1), ops2(2);
  const float loss1 = one.run(ops1, KernelMode::deterministic);
  const float loss2 = two.run(ops2, KernelMode::deterministic);
  REQUIRE(std::isfinite(loss1));
  REQUIRE(loss1 > 0.0f);
  REQUIRE(std::memcmp(&loss1, &loss2, sizeof loss1) == 0);
  REQUIRE(test::same_bits(one.gradients(), two.gradients()));
  REQUIRE(test::same_bits(one.y5, two.y5));
  // Nondeterministic mode: the same loss (the forward pass has no mode) and gradients that agree
  // to float rounding of sums of up to 2 * 64 * 576 * ... terms; 1e-4 of the largest gradient.
  const auto deterministic = two.gradients();
  REQUIRE(two.run(ops2, KernelMode::nondeterministic) == Approx(loss2).epsilon(1e-6));
  const auto nondeterministic = two.gradients();
  float largest = 0;
  for (float g : deterministic) largest = std::max(largest, std::abs(g));
  REQUIRE_CLOSE(nondeterministic, deterministic, 0.0, 1e-4 * largest, nullptr);
}

TEST_CASE("benchmark: Keras MNIST step, batch 128", "[.bench]") {
  for (const int threads : {1, 2}) {
    for (const KernelMode mode : {KernelMode::deterministic, KernelMode::nondeterministic}) {
      MnistStep step(128);
      ra::backend::cpu::CpuOps ops(threads);
      step.run(ops, mode);  // warm-up: scratch buffers grow here
      const int steps = 5;
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) step.run(ops, mode);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
      std::cout << "MNIST step, batch 128, " << threads << " thread(s), "
                << (mode == KernelMode::deterministic ? "deterministic" : "nondeterministic")
                << ": " << seconds * 1e3 << " ms (" << 9.2 / seconds << " GFLOP/s)\n";
    }
  }
}
