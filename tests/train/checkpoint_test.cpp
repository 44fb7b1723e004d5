// Checkpoints (train/checkpoint.h): a run interrupted at 1, 2 or 3 steps and resumed each time in
// a new trainer restored from the files alone ends with the uninterrupted run's bits; every piece
// of state a restore skips changes where the run goes; the files are read whole or refused.
#include <catch2/catch.hpp>

#include <bit>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "nn/model_digest.h"
#include "spec/parse.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace {

namespace fs = std::filesystem;
using ra::train::Checkpoint;
using ra::train::RestoreSkips;
using ra::train::Trainer;

struct Losses final : ra::train::Observer {
  std::vector<std::uint32_t> bits;
  void on_step(const Trainer&, const ra::train::StepEvent& e) override {
    bits.push_back(std::bit_cast<std::uint32_t>(e.loss));
  }
};

// Dropout (a random stream besides the data order), shuffling, RMSprop with decay (a schedule and
// optimizer state), 3 epochs of 4 batches, a partial last batch.
ra::spec::ExperimentSpec resumable_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 5, "threads": 2,
    "data": {"train": {"format": "random", "samples": 60, "shape": [1, 8, 8], "classes": 4},
             "batch_size": 16, "shuffle": true},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
      {"type": "dropout", "rate": 0.5}, {"type": "flatten"}, {"type": "dense", "units": 4}]},
    "loss": "softmax_cross_entropy",
    "optimizer": {"type": "rmsprop", "lr": 0.01, "decay": 0.01},
    "train": {"epochs": 3},
    "determinism": {"mode": "deterministic"}})"),
                              ".");
}

class TempFolder {
 public:
  TempFolder() : path_(fs::temp_directory_path() / ("ra-checkpoint-" + random_suffix())) {
    fs::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  static std::string random_suffix() { return std::to_string(std::random_device{}()); }
  fs::path path_;
};

struct ResumeOutcome {
  std::vector<std::uint32_t> loss_bits;
  std::string weights;
};

// Trains the spec to its end, stopping at each of `stops` and going on in a new trainer restored
// from the checkpoint files (with `skips` left out of every restore).
ResumeOutcome train_with_stops(const std::vector<std::int64_t>& stops,
                               const RestoreSkips& skips = {}) {
  const ra::spec::ExperimentSpec spec = resumable_spec();
  const ra::train::LoadedData data = ra::train::load_data(spec);
  const TempFolder folder;
  Losses losses;
  std::optional<fs::path> checkpoint;
  for (std::size_t i = 0;; ++i) {
    ra::train::RunOptions options;
    if (i < stops.size()) options.interrupt_at = stops[i];
    Trainer trainer(spec, data, options);
    if (checkpoint) trainer.restore(ra::train::read_checkpoint(*checkpoint), skips);
    const ra::train::TrainResult r = trainer.run(&losses);
    if (!r.interrupted) {
      // A sampler started again from its epoch's first batch takes that epoch's batches again.
      REQUIRE(r.steps == (skips.data_position ? 12 + 6 % 4 : 12));
      return {losses.bits, ra::nn::parameters_digest(trainer.model()).hex()};
    }
    REQUIRE(r.position.step == stops[i]);
    checkpoint =
        ra::train::write_checkpoint(ra::train::checkpoint_stem(folder.path(), r.position.step),
                                    trainer.checkpoint(r.position))
            .manifest;
  }
}

}  // namespace

TEST_CASE("a run resumed at 1, 2 or 3 points is bitwise the uninterrupted run", "[train]") {
  const ResumeOutcome whole = train_with_stops({});
  // Mid-epoch, at an epoch's end (step 4 of 4 batches an epoch) and in the last epoch.
  for (const std::vector<std::int64_t>& stops :
       {std::vector<std::int64_t>{5}, {4, 9}, {1, 4, 11}}) {
    INFO("stops: " << stops.size());
    const ResumeOutcome resumed = train_with_stops(stops);
    REQUIRE(resumed.loss_bits == whole.loss_bits);
    REQUIRE(resumed.weights == whole.weights);
  }
}

TEST_CASE("each piece a restore leaves out changes the run after it", "[train]") {
  const ResumeOutcome whole = train_with_stops({});
  RestoreSkips weights, optimizer, schedule, rng, position;
  weights.weights = true;
  optimizer.optimizer_state = true;
  schedule.schedule = true;
  rng.rng_streams = true;
  position.data_position = true;
  for (const RestoreSkips& skips : {weights, optimizer, schedule, rng, position}) {
    // Step 6: in epoch 1, so the data order's counter left at 0 draws epoch 0's order.
    const ResumeOutcome resumed = train_with_stops({6}, skips);
    REQUIRE(std::equal(whole.loss_bits.begin(), whole.loss_bits.begin() + 6,
                       resumed.loss_bits.begin()));
    REQUIRE(resumed.weights != whole.weights);
  }
}

TEST_CASE("a checkpoint is read whole: a changed tensor file or field is refused", "[train]") {
  const ra::spec::ExperimentSpec spec = resumable_spec();
  const ra::train::LoadedData data = ra::train::load_data(spec);
  ra::train::RunOptions options;
  options.interrupt_at = 3;
  Trainer trainer(spec, data, options);
  const ra::train::TrainResult r = trainer.run();
  const TempFolder folder;
  const Checkpoint saved = trainer.checkpoint(r.position);
  const auto files =
      ra::train::write_checkpoint(ra::train::checkpoint_stem(folder.path(), 3), saved);
  REQUIRE(files.manifest.filename() == "checkpoint-step-3.json");

  const Checkpoint read = ra::train::read_checkpoint(files.manifest);
  REQUIRE(read.position == saved.position);
  REQUIRE(read.optimizer_iterations == 3);
  REQUIRE(read.epoch_order == saved.epoch_order);
  REQUIRE(read.rng_streams.size() == 2);  // data/order, dropout/dropout_0
  REQUIRE(read.rng_streams[1].name == "dropout/dropout_0");
  REQUIRE(read.rng_streams[1].counter == 3);
  REQUIRE(read.weights.size() == saved.weights.size());
  REQUIRE(read.optimizer_state.size() == saved.optimizer_state.size());

  SECTION("a flipped byte in the tensor file") {
    std::fstream f(files.tensors, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
    f.close();
    REQUIRE_THROWS_WITH(ra::train::read_checkpoint(files.manifest),
                        Catch::Contains("not the tensor file its manifest"));
  }
  SECTION("a missing field") {
    auto m = nlohmann::json::parse(std::ifstream(files.manifest));
    m["position"].erase("batch");
    std::ofstream(files.manifest) << m.dump();
    REQUIRE_THROWS_WITH(ra::train::read_checkpoint(files.manifest),
                        Catch::Contains("'position.batch' is missing"));
  }
  SECTION("another spec") {
    ra::spec::ExperimentSpec other = spec;
    other.seed = 6;
    Trainer elsewhere(other, data);
    REQUIRE_THROWS_AS(elsewhere.restore(read, {}), ra::InputError);
  }
}
