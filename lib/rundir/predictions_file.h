#pragma once
// Each run's predicted classes of the eval set: run-NNN/predictions.npy beside the trace (int64
// [samples], so numpy.load opens it), and its digest in the trace's end record
// (trace/trace.h PredictionsRecord). The comparison's churn (pairwise disagreement) reads them.
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "trace/trace.h"

namespace ra::rundir {

inline constexpr const char* kPredictionsFileName = "predictions.npy";

// Writes the classes into the run's folder (snapshot_dir_of the trace; made when missing),
// atomically, and returns the end record's entry (`file` relative to the trace's folder).
trace::PredictionsRecord write_predictions(const std::filesystem::path& trace_file,
                                           std::span<const std::int32_t> classes);

// Reads a trace's predictions file (relative to the trace's folder) whole: InputError naming the
// file when it is missing, not an int64 vector, or not exactly what the trace recorded (sample
// count or digest), so churn is never computed from a stale or damaged file.
std::vector<std::int64_t> read_predictions_file(const std::filesystem::path& trace_file,
                                                const trace::PredictionsRecord& record);

}  // namespace ra::rundir
