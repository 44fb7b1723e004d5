// The training step as a CUDA graph (backend/cuda/cuda_ops.h begin_step, end_step) on a GPU
// ([gpu]: skips with the reason where none is usable): a run with --cuda-graphs on gives the bits
// of the run without (the same kernels in the same order; dropout's draws and the optimizer's
// rules reach the replays through step arguments), captures once, replays its full steps, and
// runs the settling steps and each epoch's short last batch eager, saying why.
#include <catch2/catch.hpp>

#include "backend_cuda/gpu_test_support.h"

#include <nlohmann/json.hpp>
#include <string>

#include "nn/model_digest.h"
#include "spec/parse.h"
#include "train/trainer.h"

namespace {

// A convnet with every kind of op the step graph must hold (conv, max-pool, dropout, flatten's
// copies, dense, a loss, Adam's per-step rule) on random data: 100 samples in batches of 16, so
// each epoch ends with a batch of 4; an eval set between the epochs.
ra::spec::ExperimentSpec graph_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "step-graph-gpu", "device": "cuda", "seed": 21,
    "data": {"train": {"format": "random", "samples": 100, "shape": [1, 12, 12], "classes": 5},
             "eval": {"format": "random", "samples": 30, "shape": [1, 12, 12], "classes": 5,
                      "seed": 4},
             "batch_size": 16},
    "model": {"input": [1, 12, 12], "layers": [
      {"type": "conv2d", "filters": 8, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "dropout", "rate": 0.3}, {"type": "flatten"},
      {"type": "dense", "units": 16, "activation": "relu"}, {"type": "dropout", "rate": 0.5},
      {"type": "dense", "units": 5}]},
    "optimizer": {"type": "adam", "lr": 0.003},
    "train": {"epochs": 3}})"),
                              ".");
}

}  // namespace

TEST_CASE("a step run as a CUDA graph gives the eager step's bits", "[gpu][graph]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto spec = graph_spec();
  const auto data = ra::train::load_data(spec);
  ra::train::RunOptions options;
  options.mode = ra::spec::KernelMode::deterministic;
  ra::train::Trainer eager(spec, data, options);
  const auto expected = eager.run();
  options.step_graphs = true;
  ra::train::Trainer graphs(spec, data, options);
  const auto result = graphs.run();

  const auto& launches = result.step_launches;
  std::string reasons;
  for (const auto& [reason, count] : launches.eager_reasons) {
    reasons += "\n  " + std::to_string(count) + " eager: " + reason;
  }
  INFO("eager " << launches.eager << ", capture " << launches.capture << ", replay "
                << launches.replay << reasons);
  REQUIRE(result.steps == 21);  // 3 epochs of 6 full batches and one of 4
  CHECK(launches.capture >= 1);
  CHECK(launches.replay >= 12);
  CHECK(launches.eager + launches.capture + launches.replay == 21);
  CHECK(launches.eager_reasons.count(
            "batch of 4 instead of 16 (an epoch's last batch): not worth a graph") == 1);
  for (const auto& [reason, count] : launches.eager_reasons) {
    CHECK(reason.find("capture failed") == std::string::npos);
  }

  REQUIRE(result.final_loss == expected.final_loss);
  REQUIRE(ra::nn::parameters_digest(graphs.model()) == ra::nn::parameters_digest(eager.model()));
  for (std::size_t e = 0; e < 3; ++e) {
    CHECK(result.epochs[e].mean_train_loss == expected.epochs[e].mean_train_loss);
    CHECK(*result.epochs[e].eval_accuracy == *expected.epochs[e].eval_accuracy);
  }
}
