#pragma once
// The algorithm ledger: for each convolution (and dense) geometry and direction, which
// cuDNN/cuBLAS algorithm ran, whether it is deterministic, its math mode, its workspace and who
// chose it. Written into the trace header so that a divergence can be traced to what ran.
// Pure data and names (no device): tested on any machine.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cuda/algorithm_policy.h"
#include "backend/geometry.h"
#include "backend/geometry_key.h"

namespace ra::backend::cuda {

// What cudnnFind*AlgorithmEx measured for the result autotune chose (conv_autotune.h).
struct AutotuneMeasurement {
  std::string math_type;            // perf.mathType, "CUDNN_FMA_MATH" (the only one accepted)
  double time_ms = 0.0;             // perf.time, milliseconds; varies run to run
  std::size_t workspace_bytes = 0;  // perf.memory
};

struct LedgerEntry {
  std::string layer;      // the geometry key (Ops does not know layer names): conv_geometry_key()
  std::string direction;  // "forward", "backward_data", "backward_filter"
  std::string algorithm;  // "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1", "cublasSgemm"
  // As cuDNN reports it in the algorithm's perf struct (autotuned), or the documented property of
  // a pinned algorithm (cudnn_algorithm_is_deterministic).
  bool deterministic = true;
  std::string math_type;  // "CUDNN_FMA_MATH", "CUBLAS_DEFAULT_MATH"
  std::size_t workspace_bytes = 0;
  // "pinned" (by the mode), "heuristic" (deterministic convolutions: conv_heuristic.h),
  // "autotuned", or a pin's chosen_by ("pinned-file", "pinned-ledger": backend/algorithm_pins.h)
  std::string chosen_by;
  std::optional<AutotuneMeasurement> autotune;  // set exactly when chosen_by is "autotuned"
};

// [{"layer", "direction", "algorithm", "deterministic", "math_type", "workspace_bytes",
//   "chosen_by"}, ...] in the order given; an autotuned entry adds
//   "autotune": {"math_type", "time_ms", "workspace_bytes"} (absent otherwise, as in older traces).
// autotune.time_ms varies run to run: the audit's ledger comparison ignores it
// (compare/compare_environment.cpp).
nlohmann::json to_json(const std::vector<LedgerEntry>& entries);

// "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM", "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1", ...;
// an unknown value gives "<enum prefix>_<number>".
std::string cudnn_algorithm_name(ConvDirection direction, int algorithm);
// The inverse: the enum value of a name cudnn_algorithm_name gives for `direction` (numbered
// names included), or none (a name of another direction, a cuBLAS or custom kernel).
std::optional<int> cudnn_algorithm_from_name(ConvDirection direction, const std::string& name);
std::string cudnn_math_type_name(cudnnMathType_t math);
std::string cublas_math_name(cublasMath_t math);

// The geometry keys of the entries (backend/geometry_key.h).
using backend::conv_geometry_key;
using backend::dense_geometry_key;

}  // namespace ra::backend::cuda
