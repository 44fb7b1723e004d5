#pragma once
// A resume point of a trace (docs/resume.md, docs/trace-format.md "resume"): digests of the state
// a step starts from, recorded by a run interrupted and resumed there just after its restore, and
// by the uninterrupted run as it passes the same step, so that a comparison names each piece of
// state a checkpoint left out.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/digest.h"

namespace ra::trace {

struct ResumeState {
  Digest128 weights;          // over every parameter's digest, in header order
  Digest128 optimizer_state;  // over every optimizer state tensor's digest
  Digest128 schedule;         // the optimizer's completed steps and the next step's learning rate
  // Per named random stream ("data/order", "dropout/dropout_0"): its key and counter; of a
  // PyTorch run, the global generators ("torch", "cuda", "numpy", "python_random").
  std::vector<std::pair<std::string, Digest128>> rng_streams;
  // The sample indices of the step's batch; of a PyTorch run, the batch the script gave its
  // first step() after the point (indices, inputs and labels).
  Digest128 next_batch;
  // Pieces only a PyTorch script's checkpoint has (lib/python/repro_audit/checkpoint.py): the
  // model's buffers (BatchNorm's running statistics), and the state_dict of the LR scheduler and
  // of the GradScaler the script named. Absent in the engine's records.
  std::optional<Digest128> buffers, lr_scheduler, grad_scaler;
  friend bool operator==(const ResumeState&, const ResumeState&) = default;
};

struct ResumePoint {
  std::int64_t step = 0;  // the state before this step (after `step` steps)
  // The --interrupt-at step this point serves: `step` itself for the engine; of a PyTorch script
  // that saves with its own code, the step S whose save point (its first save at or after S) is
  // here. Absent in a record: `step`.
  std::int64_t interrupt_at = 0;
  bool resumed = false;  // recorded just after a restore; else as the run passed the point
  ResumeState state;
  // A resumed run's checkpoint: its size and the time to write it and to read and restore it;
  // no times for a script's own save and load, which the recorder does not see.
  std::uint64_t checkpoint_bytes = 0;
  std::optional<double> write_seconds, read_seconds;
};

}  // namespace ra::trace
