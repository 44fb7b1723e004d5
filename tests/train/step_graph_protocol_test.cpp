// The trainer's side of a step run as a CUDA graph (backend/ops.h begin_step, end_step), on the
// CPU: a backend that answers as the CUDA backend would (eager, capture, replay) and, for a
// capture that fails, runs nothing of the step -- as a failed stream capture runs nothing. The
// trainer must run such a step again with its optimizer count rewound (Adam's bias correction
// reads it), so that the run's bits are the plain run's; and tally the launches.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "nn/model_digest.h"
#include "spec/parse.h"
#include "support/forwarding_ops.h"
#include "train/trainer.h"

namespace {

using ra::backend::StepLaunch;
using ra::backend::StepLaunchDecision;
using ra::backend::StepRequest;

// Step 0 and 1 eager; step 2's capture fails (`failure`), and the step after it is eager "for
// good" as the CUDA backend's policy would say, or (failure none) every later step replays.
class ScriptedGraphOps final : public ra::test::ForwardingOps {
 public:
  enum class Failure { none, at_end, op_throws };
  ScriptedGraphOps(int threads, Failure failure) : ForwardingOps(threads), failure_(failure) {}

  StepLaunchDecision begin_step(const StepRequest& request) override {
    REQUIRE(request.graphs);
    ++begun;
    launch_ = StepLaunch::eager;
    if (begun <= 2) return {StepLaunch::eager, "settling"};
    if (failed_) return {StepLaunch::eager, "capture failed"};
    launch_ = captured_ ? StepLaunch::replay : StepLaunch::capture;
    return {launch_, ""};
  }
  bool end_step(std::string_view op_failure) override {
    const bool capture = launch_ == StepLaunch::capture;
    launch_ = StepLaunch::eager;
    if (capture && failure_ != Failure::none) {
      failed_ = true;
      if (failure_ == Failure::op_throws) REQUIRE(op_failure == "lost the capture");
      return false;
    }
    REQUIRE(op_failure.empty());
    if (capture) captured_ = true;
    return true;
  }
  int begun = 0, skipped_calls = 0;

 protected:
  void observe(const ra::backend::OpCall& call) override {
    if (launch_ == StepLaunch::capture && failure_ != Failure::none) {
      // A failing capture runs nothing; one op may also throw, as a refused CUDA call does.
      ++skipped_calls;
      if (failure_ == Failure::op_throws && skipped_calls == 3) {
        throw std::runtime_error("lost the capture");
      }
      return;
    }
    call.run();
  }

 private:
  Failure failure_;
  StepLaunch launch_ = StepLaunch::eager;
  bool failed_ = false, captured_ = false;
};

ra::spec::ExperimentSpec graph_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 8,
    "data": {"train": {"format": "random", "samples": 44, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 8},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "dropout", "rate": 0.25}, {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "adam", "lr": 0.01},
    "train": {"epochs": 1}})"),
                              ".");
}

}  // namespace

TEST_CASE("a step whose capture ran nothing runs again, rewound, with the plain run's bits",
          "[train][graph]") {
  const auto failure = GENERATE(ScriptedGraphOps::Failure::none, ScriptedGraphOps::Failure::at_end,
                                ScriptedGraphOps::Failure::op_throws);
  CAPTURE(static_cast<int>(failure));
  const auto spec = graph_spec();
  const auto data = ra::train::load_data(spec);
  ra::train::RunOptions options;
  options.threads = 1;
  ra::train::Trainer plain(spec, data, options);
  const auto expected = plain.run();
  REQUIRE(expected.step_launches.eager == 6);
  REQUIRE(expected.step_launches.eager_reasons.size() == 1);
  REQUIRE(expected.step_launches.eager_reasons.begin()->first == "CUDA graphs off");

  ScriptedGraphOps* scripted = nullptr;
  options.step_graphs = true;
  options.make_backend = [&](int threads) {
    auto ops = std::make_unique<ScriptedGraphOps>(threads, failure);
    scripted = ops.get();
    return ops;
  };
  ra::train::Trainer trainer(spec, data, options);
  const auto result = trainer.run();

  REQUIRE(result.steps == 6);  // 44 samples in batches of 8: five full, one of 4
  REQUIRE(result.final_loss == expected.final_loss);
  REQUIRE(ra::nn::parameters_digest(trainer.model()) == ra::nn::parameters_digest(plain.model()));
  REQUIRE(trainer.optimizer().iterations() == 6);
  const auto& launches = result.step_launches;
  if (failure == ScriptedGraphOps::Failure::none) {
    REQUIRE(scripted->begun == 6);
    CHECK(launches.eager == 2);
    CHECK(launches.capture == 1);
    CHECK(launches.replay == 3);
  } else {
    REQUIRE(scripted->begun == 7);  // step 2 twice
    REQUIRE(scripted->skipped_calls > 0);
    CHECK(launches.capture == 0);
    CHECK(launches.replay == 0);
    CHECK(launches.eager == 6);
    CHECK(launches.eager_reasons.at("settling") == 2);
    CHECK(launches.eager_reasons.at("capture failed") == 4);
  }
}

TEST_CASE("an op that throws outside a capture fails the run", "[train][graph]") {
  class Throwing final : public ra::test::ForwardingOps {
   public:
    using ForwardingOps::ForwardingOps;
    StepLaunchDecision begin_step(const StepRequest&) override { return {StepLaunch::replay, ""}; }
    bool end_step(std::string_view op_failure) override {
      failures.emplace_back(op_failure);
      return op_failure.empty();
    }
    std::vector<std::string> failures;

   protected:
    void observe(const ra::backend::OpCall&) override { throw std::runtime_error("device lost"); }
  };
  const auto spec = graph_spec();
  const auto data = ra::train::load_data(spec);
  ra::train::RunOptions options;
  options.threads = 1;
  options.step_graphs = true;
  Throwing* ops = nullptr;
  options.make_backend = [&](int threads) {
    auto made = std::make_unique<Throwing>(threads);
    ops = made.get();
    return made;
  };
  ra::train::Trainer trainer(spec, data, options);
  REQUIRE_THROWS_WITH(trainer.run(), "device lost");
  // The backend was told, so it could leave the replayed step; nothing was retried.
  REQUIRE(ops->failures == std::vector<std::string>{"device lost"});
}
