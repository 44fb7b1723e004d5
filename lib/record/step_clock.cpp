#include "record/step_clock.h"

#include <algorithm>

#include "core/statistics.h"

namespace ra::record {

std::optional<double> median_interval(const std::vector<double>& starts, std::int64_t warmup) {
  std::vector<double> intervals;
  const std::size_t first = static_cast<std::size_t>(std::max<std::int64_t>(0, warmup)) + 1;
  for (std::size_t i = first; i < starts.size(); ++i) {
    intervals.push_back(starts[i] - starts[i - 1]);
  }
  if (intervals.empty()) return std::nullopt;
  return median(std::move(intervals));
}

void StepClock::before_step(data::Batch&, std::int64_t) {
  starts_.push_back(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count());
}

std::optional<double> StepClock::median_step_seconds() const {
  return median_interval(starts_, kStepClockWarmup);
}

std::int64_t StepClock::measured_steps() const {
  const auto intervals = static_cast<std::int64_t>(starts_.size()) - 1 - kStepClockWarmup;
  return std::max<std::int64_t>(0, intervals);
}

}  // namespace ra::record
