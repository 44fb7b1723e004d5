// The device path of the trainer, exercised without a GPU: a backend whose memory the host may
// not touch (host-backed here, but reported as device memory) makes the trainer stage batches,
// upload initial weights, run the optimizer through Ops::optimizer_update and download what it
// reports. The run must be bitwise identical to the plain CPU run -- which also pins the CPU
// backend's fused ops (conv + max-pool forward, filter + bias gradients) to the bits of their
// parts, which the forwarding backend calls one by one.
#include <catch2/catch.hpp>

#include <atomic>
#include <nlohmann/json.hpp>

#include "nn/model_digest.h"
#include "spec/parse.h"
#include "support/fake_device_memory.h"
#include "support/forwarding_ops.h"
#include "train/trainer.h"

namespace {

using ra::test::FakeDeviceMemory;

class FakeDeviceOps final : public ra::test::ForwardingOps {
 public:
  FakeDeviceOps(int threads, FakeDeviceMemory& memory) : ForwardingOps(threads), memory_(memory) {}
  std::string name() const override { return "fake-device"; }
  ra::Memory& memory() override { return memory_; }

 private:
  FakeDeviceMemory& memory_;
};

}  // namespace

TEST_CASE("a backend with device memory trains bit for bit like the CPU", "[train]") {
  const auto spec = ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 3,
    "data": {"train": {"format": "random", "samples": 40, "shape": [2, 8, 8], "classes": 4},
             "eval": {"format": "random", "samples": 20, "shape": [2, 8, 8], "classes": 4, "seed": 2},
             "batch_size": 16},
    "model": {"input": [2, 8, 8], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "dropout", "rate": 0.3}, {"type": "flatten"},
      {"type": "dense", "units": 4}]},
    "optimizer": {"type": "adam", "lr": 0.01},
    "train": {"epochs": 2}})"),
                                         ".");
  const auto data = ra::train::load_data(spec);
  ra::train::RunOptions cpu_options;
  cpu_options.threads = 2;
  ra::train::Trainer cpu(spec, data, cpu_options);
  const auto cpu_result = cpu.run();

  FakeDeviceMemory memory;
  ra::train::RunOptions device_options = cpu_options;
  device_options.make_backend = [&](int threads) {
    return std::make_unique<FakeDeviceOps>(threads, memory);
  };
  ra::train::Trainer device(spec, data, device_options);
  for (const ra::nn::Param* p : device.model().params()) REQUIRE_FALSE(p->value.on_host());
  const auto device_result = device.run();

  REQUIRE(device_result.final_loss == cpu_result.final_loss);
  REQUIRE(*device_result.epochs.back().eval_accuracy == *cpu_result.epochs.back().eval_accuracy);
  REQUIRE(ra::nn::parameters_digest(device.model()) == ra::nn::parameters_digest(cpu.model()));
  // The optimizer state lives beside the parameters, in device memory.
  for (const auto& [name, tensor] : device.optimizer().state()) REQUIRE_FALSE(tensor->on_host());
  // 6 steps: each uploads images and labels; initial weights were uploaded; evaluation and the
  // digests above downloaded.
  REQUIRE(memory.uploads >= 12 + device.model().params().size());
  REQUIRE(memory.downloads > 0);
}
