// The training step's loss through Ops::loss_when_done (backend/ops.h): a backend may write the
// value only when synchronize() returns, as the CUDA backend does so that a step never waits
// midway. Simulated here on the CPU: the trainer must read every step's loss after the step's
// synchronize(), and the losses must be the bits of the plain CPU run.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <optional>

#include "spec/parse.h"
#include "support/forwarding_ops.h"
#include "train/trainer.h"

namespace {

// Computes the loss at once but hands it over only at synchronize(), like the CUDA backend.
class LateLossOps final : public ra::test::ForwardingOps {
 public:
  explicit LateLossOps(int threads) : ForwardingOps(threads) {}
  void loss_when_done(LossKind kind, int n, int classes, const float* pred,
                      const std::int32_t* labels, float* grad, ra::backend::KernelMode mode,
                      float* value) override {
    REQUIRE_FALSE(pending_);  // one step, one loss
    float computed = 0.0f;
    inner().loss_when_done(kind, n, classes, pred, labels, grad, mode, &computed);
    pending_ = Pending{value, computed};
    *value = -1.0f;  // what a reader before synchronize() would see
    ++deferred;
  }
  void synchronize() override {
    ForwardingOps::synchronize();
    if (pending_) *pending_->value = pending_->loss;
    pending_.reset();
  }
  int deferred = 0;

 private:
  struct Pending {
    float* value;
    float loss;
  };
  std::optional<Pending> pending_;
};

}  // namespace

TEST_CASE("every step's loss is read after the step's synchronize", "[train]") {
  const char* loss = GENERATE("softmax_cross_entropy", "mean_squared_error");
  CAPTURE(loss);
  auto json = nlohmann::json::parse(R"({
    "seed": 4,
    "data": {"train": {"format": "random", "samples": 40, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 8},
    "model": {"input": [1, 6, 6], "layers": [{"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 2}})");
  json["loss"] = loss;
  const auto spec = ra::spec::parse_spec(json, ".");
  const auto data = ra::train::load_data(spec);
  ra::train::RunOptions options;
  options.threads = 1;
  ra::train::Trainer plain(spec, data, options);
  const auto expected = plain.run();

  LateLossOps* late = nullptr;
  options.make_backend = [&](int threads) {
    auto ops = std::make_unique<LateLossOps>(threads);
    late = ops.get();
    return ops;
  };
  ra::train::Trainer trainer(spec, data, options);
  const auto result = trainer.run();
  REQUIRE(late->deferred == 10);
  REQUIRE(result.final_loss == expected.final_loss);
  REQUIRE(result.final_loss > 0.0f);
  REQUIRE(result.epochs.size() == 2);
  for (std::size_t e = 0; e < 2; ++e) {
    REQUIRE(result.epochs[e].mean_train_loss == expected.epochs[e].mean_train_loss);
  }
}
