#include "audit/calibration.h"

#include <algorithm>

namespace ra::audit {

std::optional<record::StepCalibration> calibrate_step(const spec::ExperimentSpec& spec,
                                                      const train::LoadedData& data,
                                                      const train::RunOptions& options) {
  // One start more than intervals: warm-up + measured intervals need that many + 1 steps.
  const std::int64_t wanted = record::kStepClockWarmup + kCalibrationSteps + 1;
  const std::int64_t planned = train::planned_steps(spec, *data.train);
  if (planned < record::kStepClockWarmup + 2) return std::nullopt;
  spec::ExperimentSpec short_spec = spec;
  short_spec.train.max_steps = std::min(wanted, planned);
  train::LoadedData train_only{data.train, nullptr};
  train::Trainer trainer(short_spec, train_only, options);
  record::StepClock clock;
  static_cast<void>(trainer.run(&clock));
  const std::optional<double> median = clock.median_step_seconds();
  if (!median || *median <= 0.0) return std::nullopt;
  return record::StepCalibration{*median, clock.measured_steps()};
}

}  // namespace ra::audit
