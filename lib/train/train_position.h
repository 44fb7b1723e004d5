#pragma once
// Where a run stands between two steps: what a checkpoint saves besides tensors and random
// streams, so that the run can go on (train/checkpoint.h) and its epoch records come out as if it
// had never stopped.
#include <cstdint>

namespace ra::train {

struct TrainPosition {
  std::int64_t step = 0;   // steps done: the index of the next step
  std::int64_t epoch = 0;  // the epoch of the next step (or of the summary still due)
  std::int64_t batch = 0;  // the next batch's index within the epoch
  // The epoch's steps so far and the sum of their losses: its mean_train_loss at its end.
  std::int64_t epoch_steps = 0;
  double epoch_loss_sum = 0.0;
  float last_loss = 0.0f;  // the last step's (the run's final loss if it ends here)
  friend bool operator==(const TrainPosition&, const TrainPosition&) = default;
};

}  // namespace ra::train
