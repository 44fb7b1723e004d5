#include "backend/cuda/conv_plan.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "backend/cuda/conv_autotune.h"
#include "backend/cuda/conv_heuristic.h"
#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace ra::backend::cuda {
namespace {

std::string describe(const std::string& key, ConvDirection direction) {
  return key + " " + to_string(direction);
}

cudaMemcpy3DParms padded_copy_params(std::int64_t planes, int h, int w, const ConvPadding& pad) {
  // Linear memory seen as [planes][rows][bytes]: pitch = row bytes, ysize = rows per plane.
  // Positions and widths are in bytes (the element of a plain pointer is one byte).
  const std::size_t row = std::size_t(w) * sizeof(float);
  const std::size_t padded_row = std::size_t(pad.in_w) * sizeof(float);
  cudaMemcpy3DParms p{};
  p.extent = cudaExtent{row, std::size_t(h), std::size_t(planes)};
  p.kind = cudaMemcpyDeviceToDevice;
  // Filled in by the caller: which side is padded.
  p.srcPtr = cudaPitchedPtr{nullptr, row, row, std::size_t(h)};
  p.dstPtr = cudaPitchedPtr{nullptr, padded_row, padded_row, std::size_t(pad.in_h)};
  return p;
}

// The perf results of one cuDNN query (cudnnFind*AlgorithmEx or cudnnGet*Algorithm_v7), in the
// order it returned them. Asking for the library's maximum count
// (cudnnGetConvolution*AlgorithmMaxCount) rather than one per enum value means no result is cut
// off before the caller's filter sees it.
template <class Perf, class QueryMax, class Query>
std::vector<ConvPerfResult> perf_results(QueryMax query_max, Query query) {
  int max_count = 0;
  RA_CUDNN_CHECK(query_max(&max_count));
  std::vector<Perf> perf(std::size_t(std::max(max_count, 1)));
  int returned = 0;
  RA_CUDNN_CHECK(query(int(perf.size()), &returned, perf.data()));
  std::vector<ConvPerfResult> results;
  for (int i = 0; i < std::min(returned, int(perf.size())); ++i) {
    results.push_back(conv_perf_result(perf[std::size_t(i)]));
  }
  return results;
}

}  // namespace

ConvPadding split_padding(const ConvGeometry& g) {
  ConvPadding pad;
  pad.pad_h = std::min(g.pad_top, g.pad_bottom);
  pad.pad_w = std::min(g.pad_left, g.pad_right);
  pad.extra_top = g.pad_top - pad.pad_h;
  pad.extra_bottom = g.pad_bottom - pad.pad_h;
  pad.extra_left = g.pad_left - pad.pad_w;
  pad.extra_right = g.pad_right - pad.pad_w;
  pad.in_h = g.h + pad.extra_top + pad.extra_bottom;
  pad.in_w = g.w + pad.extra_left + pad.extra_right;
  return pad;
}

void copy_into_padded(cudaStream_t stream, const float* x, float* padded, std::int64_t planes,
                      int h, int w, const ConvPadding& pad) {
  cudaMemcpy3DParms p = padded_copy_params(planes, h, w, pad);
  p.srcPtr.ptr = const_cast<float*>(x);  // cudaPitchedPtr has no const variant; only read
  p.dstPtr.ptr = padded;
  p.dstPos = cudaPos{std::size_t(pad.extra_left) * sizeof(float), std::size_t(pad.extra_top), 0};
  RA_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
}

void copy_from_padded(cudaStream_t stream, const float* padded, float* x, std::int64_t planes,
                      int h, int w, const ConvPadding& pad) {
  cudaMemcpy3DParms p = padded_copy_params(planes, h, w, pad);
  std::swap(p.srcPtr, p.dstPtr);
  p.srcPtr.ptr = const_cast<float*>(padded);
  p.dstPtr.ptr = x;
  p.srcPos = cudaPos{std::size_t(pad.extra_left) * sizeof(float), std::size_t(pad.extra_top), 0};
  RA_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
}

ConvPlan::ConvPlan(const ConvGeometry& g)
    : g_(g),
      key_(conv_geometry_key(g)),
      padding_(split_padding(g)),
      x_(g.n, g.c, padding_.in_h, padding_.in_w),
      y_(g.n, g.k, g.p, g.q),
      w_(g.k, g.c, g.r, g.s),
      conv_(padding_.pad_h, padding_.pad_w, g.stride_h, g.stride_w),
      math_(CUDNN_DEFAULT_MATH) {
  // A new descriptor holds cuDNN's default math type; the policy's is set before any algorithm is
  // chosen or run (set_math, conv_for). Read it rather than assume it.
  RA_CUDNN_CHECK(cudnnGetConvolutionMathType(conv_.get(), &math_));
  // The geometry's output extent and cuDNN's must agree, or every index below would be wrong.
  int n = 0, k = 0, p = 0, q = 0;
  RA_CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(conv_.get(), x_.get(), w_.get(), &n, &k, &p, &q));
  if (n != g.n || k != g.k || p != g.p || q != g.q) {
    throw CudaError(key_ + ": cuDNN computes an output of " + std::to_string(n) + "x" +
                    std::to_string(k) + "x" + std::to_string(p) + "x" + std::to_string(q) +
                    ", the geometry says " + std::to_string(g.n) + "x" + std::to_string(g.k) + "x" +
                    std::to_string(g.p) + "x" + std::to_string(g.q));
  }
}

ConvChoice& ConvPlan::algorithm(cudnnHandle_t handle, ConvDirection direction, KernelMode mode,
                                const ConvFindOperands& operands, const AlgorithmPins* pins) {
  const auto slot = std::make_pair(direction, mode);
  if (auto it = chosen_.find(slot); it != chosen_.end()) return it->second;

  const AlgorithmPin* pin = pins != nullptr ? pins->find(key_, to_string(direction)) : nullptr;
  if (pins != nullptr && pin == nullptr && pins->complete) {
    throw InputError(pins->source + " pins no algorithm for " + describe(key_, direction) +
                     " (pin files cover the geometries of one model: save one for this spec)");
  }
  if (pin != nullptr) return choose_from_pin(handle, direction, mode, *pin, pins->chosen_by);

  const ConvAlgorithmPolicy policy = conv_algorithm_policy(mode, direction);
  // Deterministic autotune (algorithm_pins.h): deterministic mode times its candidates instead of
  // taking the heuristic's, for the audit to pin every other run to what this run chose.
  const bool tune_deterministic =
      pins != nullptr && pins->tune_unpinned_deterministic && mode == KernelMode::deterministic;
  // Before choosing: cudnnFind times, and the workspace query sizes, the algorithm under the
  // descriptor's math type.
  const cudnnMathType_t math = set_math(policy.math);
  LedgerEntry entry;
  entry.layer = key_;
  entry.direction = to_string(direction);
  ConvAlgorithm chosen;
  if (policy.autotune || tune_deterministic) {
    ConvPerfResult measured;
    chosen = choose_autotuned(
        handle, direction, operands, measured,
        tune_deterministic ? AutotuneCandidates::deterministic_only : AutotuneCandidates::any);
    entry.deterministic = measured.deterministic;
    entry.chosen_by = tune_deterministic ? kDeterministicAutotune : "autotuned";
    entry.autotune = AutotuneMeasurement{cudnn_math_type_name(measured.math),
                                         double(measured.time_ms), measured.memory};
  } else if (policy.heuristic) {
    chosen = choose_heuristic(handle, direction);
    // The rule accepts only results cuDNN reports as deterministic (conv_heuristic.h).
    entry.deterministic = true;
    entry.chosen_by = "heuristic";
  } else {
    chosen = choose_pinned(handle, direction, policy.algorithm);
    entry.deterministic = cudnn_algorithm_is_deterministic(direction, policy.algorithm);
    entry.chosen_by = "pinned";
  }
  chosen.math = math;
  // What the descriptor holds, not what the policy asked for: the two differ only if cuDNN
  // refused or altered the setting, which the ledger must then show.
  entry.math_type = cudnn_math_type_name(chosen.math);
  entry.algorithm = cudnn_algorithm_name(direction, chosen.algorithm);
  entry.workspace_bytes = chosen.workspace_bytes;
  return chosen_.emplace(slot, ConvChoice{chosen, PendingLedgerEntry(std::move(entry))})
      .first->second;
}

ConvChoice& ConvPlan::choose_from_pin(cudnnHandle_t handle, ConvDirection direction,
                                      KernelMode mode, const AlgorithmPin& pin,
                                      const std::string& chosen_by) {
  const std::optional<int> algorithm = cudnn_algorithm_from_name(direction, pin.algorithm);
  if (!algorithm) {
    throw InputError(describe(key_, direction) + ": the pinned algorithm '" + pin.algorithm +
                     "' is no cuDNN " + to_string(direction) + " algorithm");
  }
  // A pin keeps the mode's math type (fp32 FMA in every mode: algorithm_policy.h).
  const cudnnMathType_t math = set_math(conv_algorithm_policy(mode, direction).math);
  ConvAlgorithm chosen = choose_pinned(handle, direction, *algorithm);
  chosen.math = math;
  LedgerEntry entry;
  entry.layer = key_;
  entry.direction = to_string(direction);
  entry.algorithm = pin.algorithm;
  entry.deterministic = cudnn_algorithm_is_deterministic(direction, *algorithm);
  entry.chosen_by = chosen_by;
  entry.math_type = cudnn_math_type_name(chosen.math);
  entry.workspace_bytes = chosen.workspace_bytes;
  return chosen_
      .emplace(std::make_pair(direction, mode),
               ConvChoice{chosen, PendingLedgerEntry(std::move(entry))})
      .first->second;
}

cudnnMathType_t ConvPlan::set_math(cudnnMathType_t math) {
  if (math != math_) {
    RA_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_.get(), math));
    RA_CUDNN_CHECK(cudnnGetConvolutionMathType(conv_.get(), &math_));
  }
  return math_;
}

cudnnConvolutionDescriptor_t ConvPlan::conv_for(const ConvAlgorithm& chosen) {
  set_math(chosen.math);
  return conv_.get();
}

ConvAlgorithm ConvPlan::choose_pinned(cudnnHandle_t handle, ConvDirection direction,
                                      int algorithm) const {
  ConvAlgorithm chosen;
  chosen.algorithm = algorithm;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  const char* query = "";
  switch (direction) {
    case ConvDirection::forward:
      query = "cudnnGetConvolutionForwardWorkspaceSize";
      status = cudnnGetConvolutionForwardWorkspaceSize(
          handle, x(), w(), conv(), y(), static_cast<cudnnConvolutionFwdAlgo_t>(algorithm),
          &chosen.workspace_bytes);
      break;
    case ConvDirection::backward_data:
      query = "cudnnGetConvolutionBackwardDataWorkspaceSize";
      status = cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, w(), y(), conv(), x(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm),
          &chosen.workspace_bytes);
      break;
    case ConvDirection::backward_filter:
      query = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
      status = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, x(), y(), conv(), w(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm),
          &chosen.workspace_bytes);
      break;
  }
  if (status != CUDNN_STATUS_SUCCESS) {
    // No fallback: the run would record an algorithm that did not run, or run one it did not ask
    // for. The user can choose another mode for this op in the spec.
    throw CudaError(describe(key_, direction) + ": pinned algorithm " +
                    cudnn_algorithm_name(direction, algorithm) +
                    " is not available for this shape (" + query + ": " +
                    cudnn_status_name(status) + "); no other algorithm is substituted");
  }
  return chosen;
}

std::size_t ConvPlan::find_workspace_bytes(cudnnHandle_t handle, ConvDirection direction) const {
  std::size_t largest = 0;
  auto consider = [&](cudnnStatus_t status, std::size_t bytes) {
    // An algorithm that does not support the shape reports an error: it needs nothing.
    if (status == CUDNN_STATUS_SUCCESS) largest = std::max(largest, bytes);
  };
  std::size_t bytes = 0;
  switch (direction) {
    case ConvDirection::forward:
      for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
        consider(
            cudnnGetConvolutionForwardWorkspaceSize(
                handle, x(), w(), conv(), y(), static_cast<cudnnConvolutionFwdAlgo_t>(a), &bytes),
            bytes);
      }
      break;
    case ConvDirection::backward_data:
      for (int a = 0; a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; ++a) {
        consider(cudnnGetConvolutionBackwardDataWorkspaceSize(
                     handle, w(), y(), conv(), x(), static_cast<cudnnConvolutionBwdDataAlgo_t>(a),
                     &bytes),
                 bytes);
      }
      break;
    case ConvDirection::backward_filter:
      for (int a = 0; a < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; ++a) {
        consider(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                     handle, x(), y(), conv(), w(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(a),
                     &bytes),
                 bytes);
      }
      break;
  }
  return std::min(largest, kFindWorkspaceCap);
}

ConvAlgorithm ConvPlan::choose_autotuned(cudnnHandle_t handle, ConvDirection direction,
                                         const ConvFindOperands& operands, ConvPerfResult& measured,
                                         AutotuneCandidates candidates) const {
  // cudnnFind*AlgorithmEx runs every algorithm under the descriptor's math type on the op's own
  // operands (ConvFindOperands says why not cudnnFind*Algorithm's scratch tensors). Only an fp32
  // FMA result with status success is accepted (conv_autotune.h says why DEFAULT_MATH is not),
  // so that what runs is what was timed.
  const std::size_t workspace_bytes = find_workspace_bytes(handle, direction);
  void* const workspace = operands.workspace(workspace_bytes);
  std::vector<ConvPerfResult> results;
  const char* call = "";
  switch (direction) {
    case ConvDirection::forward:
      call = "cudnnFindConvolutionForwardAlgorithmEx";
      results = perf_results<cudnnConvolutionFwdAlgoPerf_t>(
          [&](int* n) { return cudnnGetConvolutionForwardAlgorithmMaxCount(handle, n); },
          [&](int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
            return cudnnFindConvolutionForwardAlgorithmEx(
                handle, x(), operands.first, w(), operands.second, conv(), y(), operands.output,
                requested, returned, perf, workspace, workspace_bytes);
          });
      break;
    case ConvDirection::backward_data:
      call = "cudnnFindConvolutionBackwardDataAlgorithmEx";
      results = perf_results<cudnnConvolutionBwdDataAlgoPerf_t>(
          [&](int* n) { return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, n); },
          [&](int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(
                handle, w(), operands.first, y(), operands.second, conv(), x(), operands.output,
                requested, returned, perf, workspace, workspace_bytes);
          });
      break;
    case ConvDirection::backward_filter:
      call = "cudnnFindConvolutionBackwardFilterAlgorithmEx";
      results = perf_results<cudnnConvolutionBwdFilterAlgoPerf_t>(
          [&](int* n) { return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, n); },
          [&](int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                handle, x(), operands.first, y(), operands.second, conv(), w(), operands.output,
                requested, returned, perf, workspace, workspace_bytes);
          });
      break;
  }
  const std::optional<ConvPerfResult> best = pick_autotuned(results, candidates);
  if (!best) {
    throw CudaError(describe(key_, direction) + ": " +
                    autotune_rejections(call, direction, results, candidates) +
                    "; no other algorithm is substituted");
  }
  measured = *best;
  return ConvAlgorithm{best->algorithm, best->memory};
}

ConvAlgorithm ConvPlan::choose_heuristic(cudnnHandle_t handle, ConvDirection direction) const {
  // cuDNN's ranking under the descriptor's math type (set from the policy, fp32 FMA, before this
  // call); the first acceptable result wins (conv_heuristic.h). No data is read: the ranking
  // depends on the descriptors, the GPU and the library only.
  std::vector<ConvPerfResult> ranked;
  const char* call = "";
  switch (direction) {
    case ConvDirection::forward:
      call = "cudnnGetConvolutionForwardAlgorithm_v7";
      ranked = perf_results<cudnnConvolutionFwdAlgoPerf_t>(
          [&](int* n) { return cudnnGetConvolutionForwardAlgorithmMaxCount(handle, n); },
          [&](int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
            return cudnnGetConvolutionForwardAlgorithm_v7(handle, x(), w(), conv(), y(), requested,
                                                          returned, perf);
          });
      break;
    case ConvDirection::backward_data:
      call = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
      ranked = perf_results<cudnnConvolutionBwdDataAlgoPerf_t>(
          [&](int* n) { return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, n); },
          [&](int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w(), y(), conv(), x(),
                                                               requested, returned, perf);
          });
      break;
    case ConvDirection::backward_filter:
      call = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
      ranked = perf_results<cudnnConvolutionBwdFilterAlgoPerf_t>(
          [&](int* n) { return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, n); },
          [&](int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x(), y(), conv(), w(),
                                                                 requested, returned, perf);
          });
      break;
  }
  const std::optional<ConvPerfResult> first = pick_heuristic(ranked, kHeuristicWorkspaceLimit);
  if (!first) {
    throw CudaError(describe(key_, direction) + ": " +
                    heuristic_rejections(call, direction, ranked, kHeuristicWorkspaceLimit) +
                    "; no other algorithm is substituted");
  }
  // The workspace as the run will query it, as for a pin (and a check that the shape supports
  // the algorithm, which the ranking's status already said).
  return choose_pinned(handle, direction, first->algorithm);
}

}  // namespace ra::backend::cuda
