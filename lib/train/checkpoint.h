#pragma once
// A full training checkpoint (docs/resume.md): everything a run needs to go on after a step as if
// it had never stopped. Two files, written atomically (core/atomic_file.h), the tensors first:
//   <stem>.safetensors  the weights ("weights/<param>") and the optimizer's state tensors
//                       ("optimizer/<param>.<kind>"), fp32, PyTorch layouts
//   <stem>.json         the manifest: the format, the spec's digest, the seeds, the position (step,
//                       epoch, next batch, the epoch's loss so far), the optimizer's completed
//                       steps, every named random stream's key and counter, the epoch's sample
//                       permutation, and the tensor file's size and XXH3-128 digest
// A manifest under its name means its tensor file was complete; the reader checks both whole:
// every field, the tensor file's digest, and every tensor the manifest's model needs.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "rng/philox.h"
#include "train/train_position.h"
#include "train/trainer.h"

namespace ra::train {

inline constexpr int kCheckpointFormatVersion = 1;

// One named random stream (rng/stream.h): a counter-based Philox stream is its key and the
// counter of its next draw (the epoch for "data/order", the step for "dropout/<layer>").
struct RngStreamState {
  std::string name;
  rng::PhiloxKey key;
  std::uint64_t counter = 0;
};

struct Checkpoint {
  std::string spec_name;
  std::string spec_digest;  // as a trace header's (XXH3-128 of the canonical spec's JSON)
  RunSeeds seeds;
  TrainPosition position;
  std::int64_t optimizer_iterations = 0;  // the learning-rate schedule's position
  // By parameter name, then the model's buffers by theirs (nn::Model::buffers), host.
  std::vector<std::pair<std::string, Tensor>> weights;
  std::vector<std::pair<std::string, Tensor>> optimizer_state;  // by state() name, host
  std::vector<RngStreamState> rng_streams;
  std::vector<std::int64_t> epoch_order;  // the sample order of position.epoch
};

// "<folder>/checkpoint-step-<step>": the stem of a run's checkpoint after `step` steps.
std::filesystem::path checkpoint_stem(const std::filesystem::path& folder, std::int64_t step);

struct CheckpointFiles {
  std::filesystem::path manifest, tensors;
  std::uint64_t bytes = 0;  // both files together
};
// Writes `checkpoint` as <stem>.safetensors, then <stem>.json. Throws as write_file_atomic does.
CheckpointFiles write_checkpoint(const std::filesystem::path& stem, const Checkpoint& checkpoint);
// Reads a checkpoint by its manifest (<stem>.json, or the stem itself). InputError naming the file
// and the field for anything missing, mistyped or not matching (the tensor file's digest).
Checkpoint read_checkpoint(const std::filesystem::path& manifest);

// Pieces of a restore that a test-only fault leaves out (`run --test-skip-restore`), to prove
// that the resume check names each: the restored run then goes on from fresh state there.
struct RestoreSkips {
  bool weights = false;          // the initialised weights stay
  bool optimizer_state = false;  // the state tensors stay zeros
  bool schedule = false;         // the optimizer's step count restarts at 0
  bool rng_streams = false;      // every stream's counter restarts at 0
  bool data_position = false;    // the epoch starts again from its first batch
  bool any() const {
    return weights || optimizer_state || schedule || rng_streams || data_position;
  }
};
// "weights,rng" -> RestoreSkips; InputError naming an unknown piece.
RestoreSkips parse_restore_skips(const std::string& text);

}  // namespace ra::train
