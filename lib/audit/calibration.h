#pragma once
// The reference an audit's recording cost is measured against (trace/trace.h RecordingCost): a
// few steps of the audit's spec trained with recording off, timed as the recorder times the
// audited steps (record/step_clock.h: start to start, past the same warm-up). Trained once per
// audit process, before its runs, alone (a `--jobs` audit's runs then share the cores, which the
// figure shows as cost: docs/report.md, "Cost"). No eval pass, no snapshot, no op records.
#include <cstdint>
#include <optional>

#include "record/step_clock.h"
#include "spec/spec.h"
#include "train/trainer.h"

namespace ra::audit {

// The steps whose median is the reference, after record::kStepClockWarmup.
inline constexpr std::int64_t kCalibrationSteps = 6;

// Trains `spec` on `data` with `options` (threads, mode, seeds and pins of the audit's runs)
// for warm-up + kCalibrationSteps steps, or as many as the spec has; none when it has too few
// for one measured step.
std::optional<record::StepCalibration> calibrate_step(const spec::ExperimentSpec& spec,
                                                      const train::LoadedData& data,
                                                      const train::RunOptions& options);

}  // namespace ra::audit
