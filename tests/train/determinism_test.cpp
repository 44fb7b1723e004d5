// The engine's central promise: deterministic mode gives bitwise-identical training for repeated
// runs and for any thread count; nondeterministic mode stays numerically close.
#include <catch2/catch.hpp>

#include <bit>
#include <nlohmann/json.hpp>

#include "nn/model_digest.h"
#include "spec/parse.h"
#include "train/trainer.h"

namespace {

// Records every step's loss bits and the final parameters digest.
struct Recording final : ra::train::Observer {
  std::vector<std::uint32_t> loss_bits;
  std::vector<std::int64_t> first_batch_indices;
  void on_step(const ra::train::Trainer&, const ra::train::StepEvent& e) override {
    loss_bits.push_back(std::bit_cast<std::uint32_t>(e.loss));
    if (e.step == 0) first_batch_indices = e.batch->sample_indices;
  }
};

struct Outcome {
  std::vector<std::uint32_t> loss_bits;
  std::vector<std::int64_t> first_batch;
  ra::Digest128 weights;
  ra::train::TrainResult result;
};

ra::spec::ExperimentSpec spec_with_every_layer() {
  // Overlapping pooling (pool 3 stride 2) makes max-pool backward a real reduction; "same"
  // padding with stride 2 gives asymmetric pads; a partial last batch (100 = 3*32 + 4).
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 9,
    "data": {"train": {"format": "random", "samples": 100, "shape": [3, 12, 12], "classes": 5},
             "eval": {"format": "random", "samples": 40, "shape": [3, 12, 12], "classes": 5, "seed": 1},
             "batch_size": 32},
    "model": {"input": [3, 12, 12], "layers": [
      {"type": "conv2d", "filters": 6, "kernel": 3, "stride": 2, "padding": "same", "activation": "relu"},
      {"type": "maxpool2d", "pool": 3, "stride": 2},
      {"type": "conv2d", "filters": 5, "kernel": 1, "activation": "tanh"},
      {"type": "dropout", "rate": 0.2},
      {"type": "flatten"},
      {"type": "dense", "units": 16, "activation": "sigmoid"},
      {"type": "dense", "units": 5}]},
    "optimizer": {"type": "adam", "lr": 0.01},
    "train": {"epochs": 2}})"),
                              ".");
}

ra::train::RunOptions with_threads(int threads,
                                   std::optional<ra::spec::KernelMode> mode = std::nullopt) {
  ra::train::RunOptions o;
  o.threads = threads;
  o.mode = mode;
  return o;
}

Outcome train_once(const ra::spec::ExperimentSpec& spec, ra::train::RunOptions options) {
  ra::train::Trainer trainer(spec, ra::train::load_data(spec), options);
  Recording rec;
  Outcome o;
  o.result = trainer.run(&rec);
  o.loss_bits = rec.loss_bits;
  o.first_batch = rec.first_batch_indices;
  o.weights = ra::nn::parameters_digest(trainer.model());
  return o;
}

}  // namespace

TEST_CASE("deterministic runs are bitwise identical for 1, 2 and 7 threads", "[train]") {
  const auto spec = spec_with_every_layer();
  const Outcome one = train_once(spec, with_threads(1));
  REQUIRE(one.loss_bits.size() == 8);  // 4 batches per epoch, 2 epochs
  for (int threads : {1, 2, 7}) {
    INFO(threads << " threads");
    const Outcome other = train_once(spec, with_threads(threads));
    REQUIRE(other.loss_bits == one.loss_bits);
    REQUIRE(other.weights == one.weights);
    REQUIRE(other.result.epochs.back().eval_loss == one.result.epochs.back().eval_loss);
  }
}

TEST_CASE("a different seed changes the run", "[train]") {
  auto spec = spec_with_every_layer();
  const Outcome a = train_once(spec, with_threads(2));
  spec.seed = 10;
  const Outcome b = train_once(spec, with_threads(2));
  REQUIRE(a.weights != b.weights);
  REQUIRE(a.first_batch != b.first_batch);
}

TEST_CASE("data workers do not change a bit", "[train]") {
  auto spec = spec_with_every_layer();
  const Outcome inline_loading = train_once(spec, with_threads(2));
  spec.data.workers = 2;
  const Outcome prefetched = train_once(spec, with_threads(2));
  REQUIRE(prefetched.loss_bits == inline_loading.loss_bits);
  REQUIRE(prefetched.weights == inline_loading.weights);
}

TEST_CASE("nondeterministic mode trains to nearly the same losses", "[train]") {
  const auto spec = spec_with_every_layer();
  const Outcome det = train_once(spec, with_threads(2));
  const Outcome nondet = train_once(spec, with_threads(2, ra::spec::KernelMode::nondeterministic));
  REQUIRE(nondet.loss_bits.size() == det.loss_bits.size());
  // Only the summation order of reductions differs: relative differences of ~1e-7 per step,
  // amplified over 8 Adam steps; anything beyond 1e-3 would be a real bug.
  for (std::size_t i = 0; i < det.loss_bits.size(); ++i) {
    REQUIRE(std::bit_cast<float>(nondet.loss_bits[i]) ==
            Approx(std::bit_cast<float>(det.loss_bits[i])).epsilon(1e-3));
  }
}

TEST_CASE("max_steps stops training mid-epoch", "[train]") {
  auto spec = spec_with_every_layer();
  spec.train.max_steps = 5;
  const Outcome o = train_once(spec, with_threads(1));
  REQUIRE(o.result.steps == 5);
  REQUIRE(o.result.epochs.size() == 2);
  REQUIRE(o.result.epochs[1].steps == 1);
  // The first 5 steps are those of the unlimited run.
  spec.train.max_steps = 0;
  const Outcome full = train_once(spec, with_threads(1));
  REQUIRE(std::equal(o.loss_bits.begin(), o.loss_bits.end(), full.loss_bits.begin()));
}
