// The trace recorder on the GPU ([gpu]: skips with the reason where none is usable). It hashes each
// step's gradients, weights and optimizer state after the step without waiting
// (Ops::digest_when_done: queued on the stream, read at the next step's end), so its records must
// still be the digests of those tensors as they were at that step: checked against an observer
// after it that hashes them at once, on the device and on the host from a download. With CUDA
// graphs on, the queued digests run between two launched steps.
#include <catch2/catch.hpp>

#include "backend_cuda/gpu_test_support.h"

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/digest.h"
#include "record/recorder.h"
#include "spec/parse.h"
#include "train/observer_list.h"
#include "train/trainer.h"

namespace {

// Adam (two state tensors), dropout, a short last batch and an eval set between the epochs; small,
// as the sanitize stage of scripts/gpu-verify runs it under four compute-sanitizer tools.
ra::spec::ExperimentSpec recorded_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "recorder-gpu", "device": "cuda", "seed": 17,
    "data": {"train": {"format": "random", "samples": 60, "shape": [1, 12, 12], "classes": 5},
             "eval": {"format": "random", "samples": 20, "shape": [1, 12, 12], "classes": 5,
                      "seed": 3},
             "batch_size": 16},
    "model": {"input": [1, 12, 12], "layers": [
      {"type": "conv2d", "filters": 8, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "dropout", "rate": 0.3}, {"type": "flatten"},
      {"type": "dense", "units": 300, "activation": "relu"}, {"type": "dense", "units": 5}]},
    "optimizer": {"type": "adam", "lr": 0.003},
    "train": {"epochs": 2}})"),
                              ".");
}

// Every parameter's weight and gradient digest after each step, taken at once.
class DigestsNow final : public ra::train::Observer {
 public:
  void on_step(const ra::train::Trainer& t, const ra::train::StepEvent& e) override {
    std::vector<const ra::Tensor*> weights, grads;
    for (const ra::nn::Param* p : t.model().params()) {
      weights.push_back(&p->value);
      grads.push_back(&p->grad);
      host_weights[e.step].push_back(ra::digest(p->value.to_host()));
    }
    device_weights[e.step] = t.backend_digests(weights);
    device_grads[e.step] = t.backend_digests(grads);
  }
  std::map<std::int64_t, std::vector<ra::Digest128>> device_weights, device_grads, host_weights;
};

}  // namespace

TEST_CASE("the recorder's queued step digests on the GPU are the step's tensors' digests",
          "[gpu][recorder]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const bool graphs = GENERATE(false, true);
  CAPTURE(graphs);
  const auto spec = recorded_spec();
  ra::train::RunOptions options;
  options.mode = ra::spec::KernelMode::deterministic;
  options.step_graphs = graphs;
  ra::train::Trainer trainer(spec, ra::train::load_data(spec), options);
  ra::record::Recorder recorder(ra::trace::TraceHeader{}, 2);
  DigestsNow now;
  ra::train::ObserverList observers;
  observers.add(&recorder);
  observers.add(&now);
  const auto result = trainer.run(&observers);
  const ra::trace::Trace trace = recorder.finish(trainer, result);

  REQUIRE(trace.steps.size() == 8);  // 2 epochs of 3 full batches and one of 12
  REQUIRE(trace.epochs.size() == 2);
  if (graphs) CHECK(result.step_launches.replay >= 2);
  for (const ra::trace::StepRecord& s : trace.steps) {
    INFO("step " << s.step);
    REQUIRE(s.weights == now.device_weights.at(s.step));
    REQUIRE(s.weights == now.host_weights.at(s.step));
    REQUIRE(s.grads == now.device_grads.at(s.step));
    REQUIRE(s.weights.size() == 6);
  }
}
