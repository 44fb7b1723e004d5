#pragma once
// Which result of cudnnFind*AlgorithmEx autotune may run: pure logic over the perf results (no
// device), so the filter is tested on any machine with hand-built results.
//
// Math type. Autotune must run what it timed, in fp32 without tensor cores. cudnn_graph.h
// declares cudnnMathType_t without saying what each value permits; NVIDIA's cuDNN API reference
// (cudnnMathType_t) does: CUDNN_TENSOR_OP_MATH and _ALLOW_CONVERSION permit tensor-core kernels,
// and CUDNN_DEFAULT_MATH, while it avoids tensor cores before Ampere, PERMITS TF32 tensor-core
// kernels on sm_80 and newer (the H100 is sm_90), so a DEFAULT_MATH result may be a TF32 kernel.
// Only CUDNN_FMA_MATH ("restricted to kernels that use FMA instructions") is certainly fp32 FMA:
// it is the one math type accepted, matching the descriptor's (algorithm_policy.h sets
// CUDNN_FMA_MATH before cudnnFind runs). A result must also have status CUDNN_STATUS_SUCCESS.
#include <cudnn.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/algorithm_policy.h"

namespace ra::backend::cuda {

// The fields that cudnnConvolutionFwdAlgoPerf_t, ...BwdDataAlgoPerf_t and ...BwdFilterAlgoPerf_t
// share (cudnn_cnn.h), whatever the direction.
struct ConvPerfResult {
  int algorithm = 0;  // value of the direction's algorithm enum
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  float time_ms = 0.0f;                       // perf.time: measured by cudnnFind, milliseconds
  std::size_t memory = 0;                     // perf.memory: the workspace it needs, bytes
  bool deterministic = false;                 // perf.determinism == CUDNN_DETERMINISTIC
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // perf.mathType: the math type it was timed with
};

template <class Perf>
ConvPerfResult conv_perf_result(const Perf& perf) {
  ConvPerfResult r;
  r.algorithm = static_cast<int>(perf.algo);
  r.status = perf.status;
  r.time_ms = perf.time;
  r.memory = perf.memory;
  r.deterministic = perf.determinism == CUDNN_DETERMINISTIC;
  r.math = perf.mathType;
  return r;
}

// Which results may run: any accepted one (autotune mode), or only those cuDNN also marks
// CUDNN_DETERMINISTIC (deterministic autotune: deterministic mode in run 0 of an audit, whose
// choices every other run then pins; backend/algorithm_pins.h).
enum class AutotuneCandidates { any, deterministic_only };

// Status success and math type CUDNN_FMA_MATH (see above), and deterministic when asked.
bool autotune_accepts(const ConvPerfResult& result,
                      AutotuneCandidates candidates = AutotuneCandidates::any);

// The fastest accepted result (smallest time; the first of equal times, cudnnFind's order), or
// none when no result is accepted.
std::optional<ConvPerfResult> pick_autotuned(
    const std::vector<ConvPerfResult>& results,
    AutotuneCandidates candidates = AutotuneCandidates::any);

// Why nothing was accepted, for the error: "<call> returned 3 results, none fp32 FMA with status
// success: CUDNN_CONVOLUTION_FWD_ALGO_1 (CUDNN_TENSOR_OP_MATH), CUDNN_CONVOLUTION_FWD_ALGO_4
// (CUDNN_STATUS_NOT_SUPPORTED), ...".
// With deterministic_only: "..., none deterministic fp32 FMA with status success: ..._ALGO_0
// (nondeterministic), ...".
std::string autotune_rejections(const std::string& call, ConvDirection direction,
                                const std::vector<ConvPerfResult>& results,
                                AutotuneCandidates candidates = AutotuneCandidates::any);

}  // namespace ra::backend::cuda
