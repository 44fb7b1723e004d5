// A step's time runs until its work is done: the trainer waits for the backend
// (Ops::synchronize) after the optimizer update of every step and before it stops the step's
// clock, so that a device backend's unfinished work is neither charged to the next step nor to an
// observer (the recorder). Shown without a GPU by a forwarding backend whose synchronize() is
// slow and logged: every step waits for it exactly once, as the step's last call, and every
// step's time includes that wait. The CPU's bits do not change with it.
#include <catch2/catch.hpp>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "nn/model_digest.h"
#include "spec/parse.h"
#include "support/forwarding_ops.h"
#include "train/trainer.h"

namespace {

// How long the fake device takes to finish a step's queued work.
constexpr std::chrono::milliseconds kTail{20};

// Logs the calls that matter here, in order, and makes synchronize() wait kTail.
class SlowQueueOps final : public ra::test::ForwardingOps {
 public:
  explicit SlowQueueOps(std::vector<std::string>& log) : log_(log) {}
  void synchronize() override {
    std::this_thread::sleep_for(kTail);
    log_.emplace_back("synchronize");
  }
  void optimizer_update(const ra::optim::UpdateRule& rule, std::int64_t count, float* value,
                        const float* grad, float* s0, float* s1) override {
    log_.emplace_back("optimizer_update");
    ForwardingOps::optimizer_update(rule, count, value, grad, s0, s1);
  }

 private:
  std::vector<std::string>& log_;
};

// At each step, what the backend saw last and how long the step took.
class StepLog final : public ra::train::Observer {
 public:
  explicit StepLog(const std::vector<std::string>& log) : log_(log) {}
  void on_step(const ra::train::Trainer&, const ra::train::StepEvent& e) override {
    last_calls.push_back(log_.empty() ? "" : log_.back());
    seconds.push_back(e.seconds);
    syncs_so_far.push_back(count("synchronize"));
  }
  std::vector<std::string> last_calls;
  std::vector<double> seconds;
  std::vector<std::size_t> syncs_so_far;

 private:
  std::size_t count(const std::string& call) const {
    std::size_t n = 0;
    for (const std::string& c : log_) n += c == call ? 1 : 0;
    return n;
  }
  const std::vector<std::string>& log_;
};

ra::spec::ExperimentSpec small_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 5,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 8, 8], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 2}})"),
                              ".");
}

}  // namespace

TEST_CASE("every step waits for the backend before its clock stops", "[train]") {
  const auto spec = small_spec();
  const auto data = ra::train::load_data(spec);
  std::vector<std::string> log;
  ra::train::RunOptions options;
  options.threads = 2;
  options.make_backend = [&log](int) { return std::make_unique<SlowQueueOps>(log); };
  ra::train::Trainer trainer(spec, data, options);
  StepLog steps(log);
  const auto result = trainer.run(&steps);

  REQUIRE(result.steps == 6);  // 3 batches x 2 epochs
  REQUIRE(steps.seconds.size() == 6);
  for (std::size_t i = 0; i < steps.seconds.size(); ++i) {
    INFO("step " << i);
    // The step's last call is the wait, after its updates, and it is the step's only one.
    CHECK(steps.last_calls[i] == "synchronize");
    CHECK(steps.syncs_so_far[i] == i + 1);
    // The wait is inside the step's time.
    CHECK(steps.seconds[i] >= std::chrono::duration<double>(kTail).count());
  }
  CHECK(result.median_step_seconds >= std::chrono::duration<double>(kTail).count());
  // Each wait follows the step's optimizer updates (one per parameter: 4).
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i] != "synchronize") continue;
    REQUIRE(i >= 4);
    for (std::size_t j = i - 4; j < i; ++j) CHECK(log[j] == "optimizer_update");
  }
}

TEST_CASE("the wait at the step's end changes no bit of a CPU run", "[train]") {
  // The CPU backend's synchronize() has nothing to wait for; a run through a backend that logs
  // it trains the same bits (the forwarding backend takes the unfused paths, which the CPU's
  // fused ones match bit for bit: device_memory_test.cpp).
  const auto spec = small_spec();
  const auto data = ra::train::load_data(spec);
  ra::train::RunOptions options;
  options.threads = 2;
  ra::train::Trainer cpu(spec, data, options);
  const auto cpu_result = cpu.run();
  std::vector<std::string> log;
  options.make_backend = [&log](int) { return std::make_unique<SlowQueueOps>(log); };
  ra::train::Trainer waited(spec, data, options);
  const auto waited_result = waited.run();
  CHECK(waited_result.final_loss == cpu_result.final_loss);
  CHECK(ra::nn::parameters_digest(waited.model()) == ra::nn::parameters_digest(cpu.model()));
}
