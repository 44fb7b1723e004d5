// The batchnorm layer: PyTorch's names and initial values for its parameters and buffers, its
// running statistics updated by each training forward with the spec's momentum, and evaluation
// with them (the ops themselves are tested against references in tests/ops).
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_ops.h"
#include "nn/model.h"
#include "spec/parse.h"
#include "spec/resolve.h"

namespace {

ra::spec::ExperimentSpec batchnorm_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [2, 3, 3], "classes": 2}},
    "model": {"input": [2, 3, 3], "layers": [
      {"type": "batchnorm", "name": "bn", "momentum": 0.25, "epsilon": 0.5},
      {"type": "global_avgpool"}]}})"),
                              ".");
}

// Two samples; channel 0 holds 0..8 and 9..17 (mean 8.5), channel 1 is 2 everywhere.
ra::Tensor batchnorm_input() {
  ra::Tensor x({2, 2, 3, 3});
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 9; ++i) {
      x[std::size_t(n * 18 + i)] = float(n * 9 + i);
      x[std::size_t(n * 18 + 9 + i)] = 2.0f;
    }
  }
  return x;
}

}  // namespace

TEST_CASE("batchnorm has PyTorch's parameters and buffers, named and initialised", "[nn]") {
  const auto spec = batchnorm_spec();
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {1, 1});
  REQUIRE(model.params().size() == 2);
  REQUIRE(model.params()[0]->name == "bn.weight");
  REQUIRE(model.params()[1]->name == "bn.bias");
  for (int c = 0; c < 2; ++c) {
    REQUIRE(model.params()[0]->value[std::size_t(c)] == 1.0f);
    REQUIRE(model.params()[1]->value[std::size_t(c)] == 0.0f);
  }
  REQUIRE(model.buffers().size() == 2);
  REQUIRE(model.buffers()[0]->name == "bn.running_mean");
  REQUIRE(model.buffers()[1]->name == "bn.running_var");
  REQUIRE(model.buffers()[0]->value[0] == 0.0f);
  REQUIRE(model.buffers()[1]->value[1] == 1.0f);
}

TEST_CASE("batchnorm updates its running statistics in training and uses them in evaluation",
          "[nn]") {
  const auto spec = batchnorm_spec();
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {1, 1});
  ra::backend::cpu::CpuOps ops(2);
  const ra::Tensor x = batchnorm_input();
  ra::nn::StepContext training{true, 0, &spec.determinism};
  model.forward(ops, x, training);
  // Channel 0: mean 8.5, unbiased variance sum((i - 8.5)^2, i < 18) / 17 = 484.5 / 17 = 28.5.
  // Channel 1: mean 2, variance 0. Momentum 0.25: running = 0.75 old + 0.25 batch.
  const ra::Tensor& mean = model.buffers()[0]->value;
  const ra::Tensor& var = model.buffers()[1]->value;
  REQUIRE(mean[0] == Approx(0.25 * 8.5).epsilon(1e-6));
  REQUIRE(mean[1] == Approx(0.5).epsilon(1e-6));
  REQUIRE(var[0] == Approx(0.75 + 0.25 * 28.5).epsilon(1e-6));
  REQUIRE(var[1] == Approx(0.75).epsilon(1e-6));
  // Evaluation: (x - running mean) / sqrt(running var + 0.5), pooled: channel 1 of every sample
  // is (2 - 0.5) / sqrt(1.25); the running statistics stay as they are.
  ra::nn::StepContext evaluation{false, 0, &spec.determinism};
  const ra::Tensor& pooled = model.forward(ops, x, evaluation);
  REQUIRE(pooled[1] == Approx(1.5 / std::sqrt(1.25)).epsilon(1e-6));
  REQUIRE(pooled[3] == Approx(1.5 / std::sqrt(1.25)).epsilon(1e-6));
  REQUIRE(mean[1] == Approx(0.5).epsilon(1e-6));
}
