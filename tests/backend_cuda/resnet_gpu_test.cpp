// A ResNet v2 trained on the GPU ([gpu]: skips with the reason where none is usable): batch
// normalisation (cuDNN's spatial batch norm, its running statistics as buffers), residual blocks
// with an identity and a strided 1x1 projection shortcut, global average pooling, Adam (issue 65).
// The op table's cases check each op alone on CUDA (tests/ops/cuda_ops_test.cpp); this checks them
// composed over whole steps: deterministic runs bitwise identical, eager or as CUDA graphs, and
// the first step's loss the CPU reference's within float rounding.
#include <catch2/catch.hpp>

#include "backend_cuda/gpu_test_support.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/digest.h"
#include "spec/parse.h"
#include "train/observer_list.h"
#include "train/trainer.h"

namespace {

// configs/resnet-tiny-synthetic.json's layout, one block per stage: an identity-free first block
// with a 1x1 projection, then a strided one; 3 steps of 16 samples.
ra::spec::ExperimentSpec resnet_spec(const char* device) {
  nlohmann::json spec = nlohmann::json::parse(R"({
    "name": "resnet-gpu", "seed": 5,
    "data": {"train": {"format": "random", "samples": 48, "shape": [3, 8, 8], "classes": 10,
                       "seed": 1},
             "batch_size": 16, "shuffle": true},
    "model": {"input": [3, 8, 8], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same"},
      {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}, {"type": "relu"},
      {"type": "residual", "name": "stage0", "shortcut": {"filters": 16, "stride": 1}, "layers": [
        {"type": "conv2d", "filters": 4, "kernel": 1, "padding": "same"},
        {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}, {"type": "relu"},
        {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same"},
        {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}, {"type": "relu"},
        {"type": "conv2d", "filters": 16, "kernel": 1, "padding": "same"}]},
      {"type": "residual", "name": "stage1", "shortcut": {"filters": 32, "stride": 2}, "layers": [
        {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}, {"type": "relu"},
        {"type": "conv2d", "filters": 16, "kernel": 1, "padding": "same", "stride": 2},
        {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}, {"type": "relu"},
        {"type": "conv2d", "filters": 16, "kernel": 3, "padding": "same"},
        {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}, {"type": "relu"},
        {"type": "conv2d", "filters": 32, "kernel": 1, "padding": "same"}]},
      {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}, {"type": "relu"},
      {"type": "global_avgpool"}, {"type": "dense", "units": 10}]},
    "loss": "softmax_cross_entropy",
    "optimizer": {"type": "adam", "lr": 0.001},
    "train": {"epochs": 1}})");
  spec["device"] = device;
  return ra::spec::parse_spec(spec, ".");
}

struct Trained {
  ra::train::TrainResult result;
  std::vector<ra::Digest128> weights, buffers;
  std::vector<float> losses;  // per step
};

class Losses final : public ra::train::Observer {
 public:
  void on_step(const ra::train::Trainer&, const ra::train::StepEvent& e) override {
    losses.push_back(e.loss);
  }
  std::vector<float> losses;
};

Trained train(const char* device, ra::spec::KernelMode mode, bool graphs) {
  const ra::spec::ExperimentSpec spec = resnet_spec(device);
  ra::train::RunOptions options;
  options.mode = mode;
  options.step_graphs = graphs;
  ra::train::Trainer trainer(spec, ra::train::load_data(spec), options);
  Losses losses;
  Trained out;
  out.result = trainer.run(&losses);
  out.losses = losses.losses;
  for (const ra::nn::Param* p : trainer.model().params()) {
    out.weights.push_back(ra::digest(p->value.to_host()));
  }
  for (const ra::nn::NamedBuffer* b : trainer.model().buffers()) {
    out.buffers.push_back(ra::digest(b->value.to_host()));
  }
  return out;
}

}  // namespace

TEST_CASE("a ResNet's deterministic runs on the GPU are bitwise identical", "[gpu][resnet]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const Trained a = train("cuda", ra::spec::KernelMode::deterministic, false);
  const Trained b = train("cuda", ra::spec::KernelMode::deterministic, false);
  REQUIRE(a.result.steps == 3);
  CHECK(std::isfinite(a.result.final_loss));
  CHECK(a.weights == b.weights);
  CHECK(a.buffers == b.buffers);
  REQUIRE(a.buffers.size() == 14);  // 7 batch norms, a running mean and variance each
  // Each full step one CUDA graph launch: the same bits as the eager steps.
  const Trained graphs = train("cuda", ra::spec::KernelMode::deterministic, true);
  CHECK(graphs.weights == a.weights);
  CHECK(graphs.buffers == a.buffers);
  // The nondeterministic kernels (atomics, spatial-persistent batch norm) train it too.
  const Trained nondet = train("cuda", ra::spec::KernelMode::nondeterministic, false);
  CHECK(std::isfinite(nondet.result.final_loss));
}

TEST_CASE("a ResNet's first loss on the GPU is the CPU reference's within rounding",
          "[gpu][resnet]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const Trained gpu = train("cuda", ra::spec::KernelMode::deterministic, false);
  const Trained cpu = train("cpu", ra::spec::KernelMode::deterministic, false);
  REQUIRE(gpu.losses.size() == 3);
  REQUIRE(cpu.losses.size() == 3);
  // The same initial weights and batch; other summation orders (cuDNN's convolutions and batch
  // statistics), so a few float ulps of the loss, not its bits.
  CHECK(std::abs(gpu.losses[0] - cpu.losses[0]) <= 1e-4f * std::abs(cpu.losses[0]));
  // After Adam's first updates the runs drift apart by more, but stay near.
  CHECK(std::abs(gpu.losses[2] - cpu.losses[2]) <= 1e-2f * std::abs(cpu.losses[2]));
}
