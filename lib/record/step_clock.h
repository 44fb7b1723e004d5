#pragma once
// The wall time of whole steps, as an audit pays them: from one step's start (the trainer's
// before_step, after the loader gave the batch) to the next's, so an interval holds the step, what
// every observer does after it (the recorder, the snapshot writer, progress) and the loader's
// next batch. The recorder keeps one for its run; an audit's calibration (audit/calibration.h)
// keeps one for a few steps trained with recording off. The ratio of the two medians is what
// recording costs, measured (trace/trace.h RecordingCost), rather than a sum of the recorder's own
// timers, which misses what recording does inside the step (the fused update digests) or to the
// device's queue.
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "train/trainer.h"

namespace ra::record {

// The steps a median skips at the start: the first calls allocate, choose algorithms (autotune)
// and fill caches.
inline constexpr std::int64_t kStepClockWarmup = 2;

// The median of the intervals between consecutive `starts` (seconds on one clock, in order),
// skipping the first `warmup` intervals; none when fewer than one interval is left.
std::optional<double> median_interval(const std::vector<double>& starts, std::int64_t warmup);

// The median step of a few steps trained with recording off (audit/calibration.h): what the
// recorder's own median is measured against.
struct StepCalibration {
  double step_wall_seconds = 0.0;  // median, start to start
  std::int64_t steps = 0;          // the intervals it is the median of
};

class StepClock final : public train::Observer {
 public:
  void before_step(data::Batch&, std::int64_t) override;
  // The median interval past the warm-up (median_interval), and how many intervals it is of.
  std::optional<double> median_step_seconds() const;
  std::int64_t measured_steps() const;

 private:
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  std::vector<double> starts_;  // seconds since origin_
};

}  // namespace ra::record
