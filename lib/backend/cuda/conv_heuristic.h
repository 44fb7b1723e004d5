#pragma once
// Which result of cuDNN's heuristic ranking deterministic mode runs: pure logic over the ranked
// results (no device), so the rule is tested on any machine with hand-built rankings.
//
// cudnnGetConvolutionForwardAlgorithm_v7, ...BackwardDataAlgorithm_v7 and
// ...BackwardFilterAlgorithm_v7 rank every algorithm of a direction for a geometry, best expected
// first, from cuDNN's heuristics: they time nothing, so the ranking is a function of the GPU, the
// cuDNN version and the descriptors (geometry, math type) alone, the same in every run and
// process. Deterministic mode runs, per geometry and direction, the FIRST ranked result that
//   1. has status CUDNN_STATUS_SUCCESS,
//   2. is deterministic (perf.determinism == CUDNN_DETERMINISTIC),
//   3. was ranked under CUDNN_FMA_MATH (fp32 FMA, no TF32 or tensor cores; conv_autotune.h says
//      why CUDNN_DEFAULT_MATH is refused), and
//   4. needs at most kHeuristicWorkspaceLimit of workspace (perf.memory).
// So the choice is as reproducible as a pinned algorithm, without pinning one that is slow on
// the GPU at hand: on an H100 (issue 33) the pinned BWD_FILTER_ALGO_1 took 0.33-0.40 ms where the
// heuristic's first deterministic filter-gradient algorithm, FFT, took 0.09-0.12 ms. FFT-type
// algorithms round differently from the direct ones (their error is bounded normwise, not per
// element: docs/determinism.md); they are still deterministic. When no result is accepted the
// op fails naming every result and why it was refused: no other algorithm is substituted.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/algorithm_policy.h"
#include "backend/cuda/conv_autotune.h"

namespace ra::backend::cuda {

// The most workspace a heuristic choice may need: a constant, so that the free memory of the
// moment cannot change what runs. 256 MiB is far above what the FFT algorithms ask of the Keras
// convnets' geometries and a small part of a data-centre GPU's memory.
inline constexpr std::size_t kHeuristicWorkspaceLimit = std::size_t(256) << 20;

// Conditions 1-4 above.
bool heuristic_accepts(const ConvPerfResult& result, std::size_t workspace_limit);

// The first accepted result in the ranking's order, or none.
std::optional<ConvPerfResult> pick_heuristic(const std::vector<ConvPerfResult>& ranked,
                                             std::size_t workspace_limit);

// Why nothing was accepted, for the error: "<call> ranked 3 results, none deterministic fp32 FMA
// with status success within 268435456 bytes of workspace: CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0
// (nondeterministic), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT (workspace 300000000 bytes), ...".
std::string heuristic_rejections(const std::string& call, ConvDirection direction,
                                 const std::vector<ConvPerfResult>& ranked,
                                 std::size_t workspace_limit);

}  // namespace ra::backend::cuda
