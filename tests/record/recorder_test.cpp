// The recorder's two ways of digesting a step: from the chunk digests the fused optimizer update
// took while each chunk was in cache (optim/rules/update_digests.h), or by reading every tensor
// back from memory afterwards. Both must record the same digests, for optimizers with no, one and
// two state tensors per parameter, and a parameter changed after the update (fault injection) must
// be recorded as changed.
#include <catch2/catch.hpp>

#include <atomic>
#include <bit>
#include <nlohmann/json.hpp>
#include <string>

#include "nn/model_digest.h"
#include "record/recorder.h"
#include "spec/parse.h"
#include "support/forwarding_ops.h"
#include "train/observer_list.h"
#include "train/trainer.h"

namespace {

// Counts the fused updates; with `fuse` false it refuses them, as a backend without the fused
// update does, so the recorder falls back to digesting from memory.
class FusionSwitchOps final : public ra::test::ForwardingOps {
 public:
  explicit FusionSwitchOps(bool fuse) : ForwardingOps(2), fuse_(fuse) {}
  bool optimizer_update_digested(const ra::optim::UpdateRule& rule, std::int64_t count,
                                 float* value, const float* grad, float* s0, float* s1,
                                 const ra::optim::ChunkDigestTargets& digests) override {
    if (!fuse_) return false;
    ++fused_calls;
    return ForwardingOps::optimizer_update_digested(rule, count, value, grad, s0, s1, digests);
  }
  std::atomic<int> fused_calls{0};

 private:
  bool fuse_;
};

ra::spec::ExperimentSpec spec_with(const std::string& optimizer) {
  // A dense layer of 40 x 900 weights: several 64 KiB digest chunks, the last one short.
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 9,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 10, 10], "classes": 5},
             "batch_size": 16},
    "model": {"input": [1, 10, 10], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same", "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 900, "activation": "relu"},
      {"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 5}]},
    "optimizer": )" + optimizer + R"(,
    "train": {"epochs": 2}})"),
                              ".");
}

struct Recorded {
  ra::trace::Trace trace;
  int fused_calls = 0;
};

// Trains the spec with a Recorder (and `extra` before it, as an audit orders its observers).
Recorded record(const ra::spec::ExperimentSpec& spec, bool fuse,
                ra::train::Observer* extra = nullptr) {
  FusionSwitchOps* ops = nullptr;
  ra::train::RunOptions options;
  options.make_backend = [&ops, fuse](int) {
    auto owned = std::make_unique<FusionSwitchOps>(fuse);
    ops = owned.get();
    return owned;
  };
  ra::train::Trainer trainer(spec, ra::train::load_data(spec), options);
  ra::record::Recorder recorder(ra::trace::TraceHeader{}, 2);
  ra::train::ObserverList observers;
  observers.add(extra);
  observers.add(&recorder);
  const ra::train::TrainResult result = trainer.run(&observers);
  Recorded out{recorder.finish(trainer, result), ops->fused_calls.load()};
  return out;
}

void require_same_steps(const ra::trace::Trace& a, const ra::trace::Trace& b) {
  REQUIRE(a.steps.size() == b.steps.size());
  REQUIRE(a.header.optimizer_state == b.header.optimizer_state);
  for (std::size_t s = 0; s < a.steps.size(); ++s) {
    INFO("step " << s);
    REQUIRE(a.steps[s].batch_inputs == b.steps[s].batch_inputs);
    REQUIRE(a.steps[s].batch_indices == b.steps[s].batch_indices);
    REQUIRE(a.steps[s].loss_bits == b.steps[s].loss_bits);
    REQUIRE(a.steps[s].grads == b.steps[s].grads);
    REQUIRE(a.steps[s].weights == b.steps[s].weights);
    REQUIRE(a.steps[s].optimizer_state == b.steps[s].optimizer_state);
    REQUIRE(a.steps[s].buffers == b.steps[s].buffers);
  }
  REQUIRE(a.final->weights == b.final->weights);
  REQUIRE(a.final->buffers == b.final->buffers);
}

// Flips one bit of a weight right after the update of one step, as `--inject-fault` does.
class FlipAfterUpdate final : public ra::train::Observer {
 public:
  explicit FlipAfterUpdate(std::int64_t step) : step_(step) {}
  bool after_update(ra::nn::Model& model, std::int64_t step) override {
    if (step != step_) return false;
    float& w = model.params()[2]->value[123];  // dense_0.weight
    w = std::bit_cast<float>(std::bit_cast<std::uint32_t>(w) ^ 1u);
    return true;
  }

 private:
  std::int64_t step_;
};

}  // namespace

TEST_CASE("digests from the fused optimizer update equal digests read from memory",
          "[audit][recorder][digest]") {
  for (const char* optimizer :
       {R"({"type": "sgd", "lr": 0.05})", R"({"type": "sgd", "lr": 0.05, "momentum": 0.9})",
        R"({"type": "adam", "lr": 0.001})", R"({"type": "adadelta", "lr": 1.0})"}) {
    INFO(optimizer);
    const auto spec = spec_with(optimizer);
    const Recorded fused = record(spec, true);
    const Recorded unfused = record(spec, false);
    const std::size_t params = fused.trace.header.params.size();
    REQUIRE(params == 6);
    // Every parameter of every step went through the fused update, and none in the other run.
    REQUIRE(fused.fused_calls == static_cast<int>(params * fused.trace.steps.size()));
    REQUIRE(unfused.fused_calls == 0);
    require_same_steps(fused.trace, unfused.trace);
    // The hashing inside the update is counted as recording time.
    REQUIRE(fused.trace.final->recording_seconds > 0.0);
  }
}

TEST_CASE("a parameter changed after the fused update is recorded as changed",
          "[audit][recorder][digest]") {
  const auto spec = spec_with(R"({"type": "adam", "lr": 0.001})");
  FlipAfterUpdate flip_fused(2), flip_unfused(2);
  const Recorded fused = record(spec, true, &flip_fused);
  const Recorded unfused = record(spec, false, &flip_unfused);
  require_same_steps(fused.trace, unfused.trace);
  // And the flip shows at step 2 itself, in that weight only.
  const Recorded clean = record(spec, true);
  REQUIRE(clean.trace.steps[1].weights == fused.trace.steps[1].weights);
  for (std::size_t p = 0; p < clean.trace.steps[2].weights.size(); ++p) {
    INFO("parameter " << p);
    REQUIRE((clean.trace.steps[2].weights[p] == fused.trace.steps[2].weights[p]) == (p != 2));
  }
}

TEST_CASE("a model's buffers are recorded at the start, every step and the end",
          "[audit][recorder][digest]") {
  const auto spec = ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 9,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 6, 6], "classes": 5},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same"},
      {"type": "batchnorm", "name": "bn"}, {"type": "relu"},
      {"type": "global_avgpool"}, {"type": "dense", "units": 5}]},
    "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
    "train": {"epochs": 1}})"),
                                         ".");
  const Recorded fused = record(spec, true);
  const Recorded unfused = record(spec, false);
  require_same_steps(fused.trace, unfused.trace);
  const ra::trace::Trace& t = fused.trace;
  // Buffers are version 3's records.
  REQUIRE(t.header.format_version == ra::trace::kTraceFormatVersionWithStatus);
  REQUIRE(t.header.buffers.size() == 2);
  REQUIRE(t.header.buffers[0].name == "bn.running_mean");
  REQUIRE(t.header.buffers[1].name == "bn.running_var");
  // Initially zeros and ones, as PyTorch's BatchNorm2d starts.
  REQUIRE(t.initial_buffers == std::vector<ra::Digest128>{ra::digest(ra::Tensor({3}, 0.0f)),
                                                          ra::digest(ra::Tensor({3}, 1.0f))});
  // Each training step moves the running statistics; the end record holds the last step's.
  REQUIRE(t.steps.size() == 3);
  REQUIRE(t.steps[0].buffers != t.initial_buffers);
  REQUIRE(t.steps[1].buffers != t.steps[0].buffers);
  REQUIRE(t.final->buffers == t.steps.back().buffers);
}
