// Losses beyond the op table (tests/ops checks both against the reference in both modes):
// hand-computed values, stability for large logits, label checks, and finite differences.
#include <catch2/catch.hpp>

#include <cmath>

#include "backend/backend_test_util.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"
#include "core/error.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::KernelMode;

namespace {

using test::kModes;
}

TEST_CASE("softmax cross-entropy on a hand-computed case", "[backend][loss]") {
  // Row 0: logits [1 2 3], label 2. logsumexp = 3 + log(e^-2 + e^-1 + 1) = 3 + log(1.50321472)
  //   = 3.40760596; loss 0.40760596; softmax [0.09003057 0.24472847 0.66524096].
  // Row 1: logits [0 0 0], label 0: loss log 3 = 1.09861229; softmax 1/3 each.
  // Mean loss (0.40760596 + 1.09861229) / 2 = 0.75310913.
  // dlogits = (softmax - onehot) / 2:
  //   row 0 [0.04501529 0.12236424 -0.16737952], row 1 [-0.33333333 0.16666667 0.16666667].
  const std::vector<float> logits{1, 2, 3, 0, 0, 0};
  const std::vector<std::int32_t> labels{2, 0};
  const std::vector<double> expected{
      0.04501528658519022, 0.12236423552739879, -0.16737952211258916, -1.0 / 3, 1.0 / 6, 1.0 / 6};
  ra::backend::cpu::CpuOps ops(2);
  for (const KernelMode mode : kModes) {
    std::vector<float> dlogits(6);
    const float loss =
        ops.softmax_cross_entropy(2, 3, logits.data(), labels.data(), dlogits.data(), mode);
    REQUIRE(loss == Approx(0.7531091265562452).epsilon(1e-6));
    for (int i = 0; i < 6; ++i) REQUIRE(dlogits[i] == Approx(expected[i]).epsilon(1e-6));
    // Without a gradient buffer only the value is computed, and it is the same value.
    REQUIRE(ops.softmax_cross_entropy(2, 3, logits.data(), labels.data(), nullptr, mode) == loss);
  }
}

TEST_CASE("softmax cross-entropy is stable for large logits", "[backend][loss]") {
  // exp(1000) overflows float; after subtracting the row max the largest exponent is 0.
  const std::vector<float> logits{1000, 0, -1000, 1000, 0, -1000};
  const std::vector<std::int32_t> labels{0, 1};
  ra::backend::cpu::CpuOps ops(1);
  std::vector<float> dlogits(6);
  const float loss = ops.softmax_cross_entropy(2, 3, logits.data(), labels.data(), dlogits.data(),
                                               KernelMode::deterministic);
  // Row 0 costs ~0 (e^-1000 vanishes), row 1 costs exactly 1000 - 0: mean 500.
  REQUIRE(loss == 500.0f);
  REQUIRE(dlogits == std::vector<float>{0, 0, 0, 0.5f, -0.5f, 0});
}

TEST_CASE("losses reject labels outside 0 .. classes - 1", "[backend][loss]") {
  const std::vector<float> logits(6, 0.0f);
  ra::backend::cpu::CpuOps ops(2);
  for (const std::vector<std::int32_t>& labels :
       {std::vector<std::int32_t>{0, 3}, std::vector<std::int32_t>{-1, 0}}) {
    REQUIRE_THROWS_AS(ops.softmax_cross_entropy(2, 3, logits.data(), labels.data(), nullptr,
                                                KernelMode::deterministic),
                      ra::InputError);
    REQUIRE_THROWS_AS(ops.mean_squared_error(2, 3, logits.data(), labels.data(), nullptr,
                                             KernelMode::nondeterministic),
                      ra::InputError);
    REQUIRE_THROWS_AS(ref::softmax_cross_entropy(2, 3, logits.data(), labels.data(),
                                                 static_cast<float*>(nullptr)),
                      ra::InputError);
  }
  const std::vector<std::int32_t> bad{0, 7};
  REQUIRE_THROWS_WITH(ops.softmax_cross_entropy(2, 3, logits.data(), bad.data(), nullptr,
                                                KernelMode::deterministic),
                      Catch::Contains("label 7 of sample 1") && Catch::Contains("[0, 3)"));
}

TEST_CASE("mean squared error on a hand-computed case", "[backend][loss]") {
  // pred [0.5 0.25], label 0: diff [-0.5 0.25], mean (0.25 + 0.0625) / 2 = 0.15625,
  // dpred = 2 diff / 2 = [-0.5 0.25] (all exact in binary).
  const std::vector<float> pred{0.5f, 0.25f};
  const std::vector<std::int32_t> labels{0};
  ra::backend::cpu::CpuOps ops(1);
  std::vector<float> dpred(2);
  REQUIRE(ops.mean_squared_error(1, 2, pred.data(), labels.data(), dpred.data(),
                                 KernelMode::deterministic) == 0.15625f);
  REQUIRE(dpred == std::vector<float>{-0.5f, 0.25f});
}

TEST_CASE("loss gradients match central differences", "[backend][loss][gradient]") {
  // Objective = the loss computed by the reference in double. h = 1e-4: the cross-entropy's
  // truncation error h^2 |f'''| / 6 ~ 1e-10 against gradients of size ~1/n = 0.1; MSE is
  // quadratic, so its central difference has no truncation error at all.
  const int n = 6, classes = 5;
  const auto logits = test::random_values(std::size_t(n) * classes, 13, -3.0f, 3.0f);
  const std::vector<std::int32_t> labels{0, 4, 2, 2, 1, 3};
  ra::backend::cpu::CpuOps ops(2);
  std::vector<double> z = test::to_double(logits);
  for (const bool cross_entropy : {true, false}) {
    INFO((cross_entropy ? "softmax_cross_entropy" : "mean_squared_error"));
    auto objective = [&] {
      return cross_entropy ? ref::softmax_cross_entropy(n, classes, z.data(), labels.data(),
                                                        static_cast<double*>(nullptr))
                           : ref::mean_squared_error(n, classes, z.data(), labels.data(),
                                                     static_cast<double*>(nullptr));
    };
    const auto numeric = ra::backend::central_differences(z, 1e-4, objective);
    for (const KernelMode mode : kModes) {
      std::vector<float> grad(logits.size());
      if (cross_entropy) {
        ops.softmax_cross_entropy(n, classes, logits.data(), labels.data(), grad.data(), mode);
      } else {
        ops.mean_squared_error(n, classes, logits.data(), labels.data(), grad.data(), mode);
      }
      const auto check = ra::backend::compare_gradients(grad, numeric, 1e-5, 1e-8);
      INFO(check.describe());
      REQUIRE(check.ok);
    }
  }
}
