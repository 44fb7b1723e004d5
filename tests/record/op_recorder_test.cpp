// The op recorder against digests taken independently of it: what each op read and wrote, hashed
// straight from the model's tensors around the step, must be what its records say, whatever the
// recorder's cache reused; records only in the window, none of the evaluation after an epoch.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "record/op_recorder.h"
#include "record/recorder.h"
#include "spec/parse.h"
#include "train/observer_list.h"
#include "train/trainer.h"

namespace {

using ra::Digest128;

ra::spec::ExperimentSpec spec() {
  // A dense layer of 64 x 600 weights: several 64 KiB chunks, hashed on the recorder's threads.
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 21, "threads": 2,
    "data": {"train": {"format": "random", "samples": 40, "shape": [1, 12, 12], "classes": 4},
             "eval": {"format": "random", "samples": 16, "shape": [1, 12, 12], "classes": 4},
             "batch_size": 16},
    "model": {"input": [1, 12, 12], "layers": [
      {"type": "conv2d", "filters": 6, "kernel": 3, "padding": "same", "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"},
      {"type": "dense", "units": 64, "activation": "relu"},
      {"type": "dropout", "rate": 0.3}, {"type": "dense", "units": 4}]},
    "optimizer": {"type": "adam", "lr": 0.01},
    "train": {"epochs": 2}})"),
                              ".");
}

Digest128 flat(const ra::Tensor& t) {
  return ra::digest_bytes(ra::DType::f32, ra::Shape{static_cast<std::int64_t>(t.size())}, t.data(),
                          t.bytes());
}

// Takes each parameter's digest before every step and after it, and each step's batch images.
class Witness final : public ra::train::Observer {
 public:
  void before_step(ra::data::Batch& batch, std::int64_t) override {
    images.push_back(flat(batch.images));
    std::map<std::string, Digest128> before;
    for (const ra::nn::Param* p : trainer->model().params()) before[p->name] = flat(p->value);
    values_before.push_back(before);
  }
  void on_step(const ra::train::Trainer& t, const ra::train::StepEvent&) override {
    std::map<std::string, Digest128> after;
    for (const ra::nn::Param* p : t.model().params()) after[p->name] = flat(p->value);
    values_after.push_back(after);
  }
  const ra::train::Trainer* trainer = nullptr;
  std::vector<Digest128> images;
  std::vector<std::map<std::string, Digest128>> values_before, values_after;
};

}  // namespace

TEST_CASE("op records hold the digests of what each op read and wrote", "[audit][ops]") {
  ra::record::OpRecorder* ops = nullptr;
  ra::train::RunOptions options;
  options.wrap_backend = [&](ra::backend::Ops& backend) {
    auto recorder = std::make_unique<ra::record::OpRecorder>(backend, 2);
    ops = recorder.get();
    return std::unique_ptr<ra::backend::Ops>(std::move(recorder));
  };
  const auto s = spec();
  ra::train::Trainer trainer(s, ra::train::load_data(s), options);
  REQUIRE(ops != nullptr);
  ra::record::Recorder recorder(ra::trace::TraceHeader{}, 2);
  recorder.record_ops(*ops, ra::trace::OpWindow{1, 5});  // 3 steps an epoch: 1..2 and 3..4
  Witness witness;
  witness.trainer = &trainer;
  ra::train::ObserverList observers;
  observers.add(&witness);
  observers.add(&recorder);
  const auto result = trainer.run(&observers);
  const ra::trace::Trace trace = recorder.finish(trainer, result);
  REQUIRE(trace.steps.size() == 6);
  CHECK(trace.header.format_version == 2);

  std::size_t per_step = 0;
  for (const auto& step : trace.steps) {
    const auto s_index = static_cast<std::size_t>(step.step);
    INFO("step " << step.step);
    REQUIRE(step.ops_recorded == (step.step >= 1 && step.step < 5));
    if (!step.ops_recorded) {
      CHECK(step.ops.empty());
      continue;
    }
    // The same records every step, the last of an epoch too: the evaluation after it is not in.
    if (per_step == 0) per_step = step.ops.size();
    CHECK(step.ops.size() == per_step);
    CHECK(step.ops.front().op == "batch");
    CHECK(step.ops.front().out[1] == witness.images[s_index]);
    int updates = 0, forwards = 0;
    for (const auto& r : step.ops) {
      if (r.op == "optimizer.update") {
        ++updates;
        CHECK(r.in[0] == witness.values_before[s_index].at(r.layer));
        CHECK(r.out[0] == witness.values_after[s_index].at(r.layer));
      }
      if (r.op == "dense.forward" || r.op == "conv2d.forward") {
        ++forwards;
        CHECK(r.in[1] == witness.values_before[s_index].at(r.layer + ".weight"));
        CHECK(r.in[2] == witness.values_before[s_index].at(r.layer + ".bias"));
      }
      if (r.op == "maxpool2d.forward" || r.op == "maxpool2d.backward") {
        CHECK(r.layer == "maxpool2d_0");  // not the conv it may be computed with
      }
    }
    CHECK(updates == 6);
    CHECK(forwards == 3);
  }
  // Each op's output is the next op's input, digest for digest: the records chain.
  const auto& ops_of_step = trace.steps[1].ops;
  for (std::size_t i = 0; i + 1 < ops_of_step.size(); ++i) {
    if (ops_of_step[i].op == "conv2d.forward") {
      CHECK(ops_of_step[i + 1].op == "maxpool2d.forward");
      CHECK(ops_of_step[i + 1].in[0] == ops_of_step[i].out[0]);
    }
  }
  CHECK(trace.final->recording_seconds > 0.0);
}
