// record/run_observers.h SnapshotWriter on a device backend (simulated: host memory reported as a
// device's, tests/support/fake_device_memory.h): each snapshot downloads every weight with one
// wait into buffers of the backend's staging memory, reuses those buffers from one snapshot to
// the next, and still holds the weights of the step it was taken at, written inline or behind
// the run.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "record/run_observers.h"
#include "spec/parse.h"
#include "support/counting_host_memory.h"
#include "support/fake_device_memory.h"
#include "support/forwarding_ops.h"
#include "support/temp_dir.h"
#include "train/observer_list.h"
#include "train/trainer.h"

namespace {

using ra::test::CountingHostMemory;
using ra::test::FakeDeviceMemory;

class StagingDeviceOps final : public ra::test::ForwardingOps {
 public:
  StagingDeviceOps(int threads, FakeDeviceMemory& memory, CountingHostMemory& staging)
      : ForwardingOps(threads), memory_(memory), staging_(staging) {}
  std::string name() const override { return "fake-device"; }
  ra::Memory& memory() override { return memory_; }
  ra::Memory& staging_memory() const override { return staging_; }

 private:
  FakeDeviceMemory& memory_;
  CountingHostMemory& staging_;
};

// Host copies of the weights after every step, taken after the snapshot writer's on_step.
class WeightsAtStep final : public ra::train::Observer {
 public:
  void on_step(const ra::train::Trainer& t, const ra::train::StepEvent& e) override {
    auto& copies = at[e.step];
    for (const ra::nn::Param* p : t.model().params()) copies.emplace(p->name, p->value.to_host());
  }
  std::map<std::int64_t, std::map<std::string, ra::Tensor>> at;
};

ra::spec::ExperimentSpec staging_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 5,
    "data": {"train": {"format": "random", "samples": 96, "shape": [1, 8, 8], "classes": 3},
             "batch_size": 8},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "adam", "lr": 0.01},
    "train": {"epochs": 1}})"),
                              ".");
}

}  // namespace

TEST_CASE("device snapshots stage in reused buffers, one wait each, with their step's weights",
          "[record]") {
  const bool behind = GENERATE(false, true);
  CAPTURE(behind);
  const auto spec = staging_spec();
  const auto data = ra::train::load_data(spec);
  FakeDeviceMemory memory;
  CountingHostMemory staging;
  ra::train::RunOptions options;
  options.threads = 1;
  options.make_backend = [&](int threads) {
    return std::make_unique<StagingDeviceOps>(threads, memory, staging);
  };
  ra::train::Trainer trainer(spec, data, options);
  const std::size_t param_count = trainer.model().params().size();

  ra::test::TempDir dir;
  const auto snapshot_dir = dir.path / "run-000";
  ra::record::SnapshotOptions snapshot_options;
  snapshot_options.every_steps = 1;
  snapshot_options.write_behind = behind;
  ra::record::SnapshotWriter writer(snapshot_dir, snapshot_options, {{"run", "0"}});
  WeightsAtStep weights;
  ra::train::ObserverList observers;
  observers.add(&writer);
  observers.add(&weights);
  const std::size_t batches_before = memory.download_batches;
  const auto result = trainer.run(&observers);
  writer.finish(trainer);
  REQUIRE(result.steps == 12);

  // initial, 12 steps, final: one batched download each, however many tensors.
  const std::size_t snapshots = 14;
  REQUIRE(memory.download_batches - batches_before == snapshots);
  // Inline one set serves every snapshot; behind the run at most the two pending and the one
  // being taken.
  const std::size_t sets = behind ? ra::record::SnapshotWriter::kSnapshotsPending + 1 : 1;
  REQUIRE(staging.allocations <= sets * param_count);
  REQUIRE(staging.allocations >= param_count);

  for (const auto& [step, copies] : weights.at) {
    const auto file = ra::formats::read_safetensors(
        ra::record::SnapshotWriter::file_for(snapshot_dir, "step-" + std::to_string(step)));
    REQUIRE(file.tensors.size() == param_count);
    for (const auto& [name, expected] : copies) {
      const ra::Tensor* written = file.find(name);
      REQUIRE(written != nullptr);
      REQUIRE(ra::bitwise_equal(*written, expected));
    }
  }
  const auto final_file =
      ra::formats::read_safetensors(ra::record::SnapshotWriter::file_for(snapshot_dir, "final"));
  for (const ra::nn::Param* p : trainer.model().params()) {
    REQUIRE(ra::bitwise_equal(*final_file.find(p->name), p->value.to_host()));
  }
}
