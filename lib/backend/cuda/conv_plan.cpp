#include "backend/cuda/conv_plan.h"

#include <algorithm>
#include <array>

#include "backend/cuda/cuda_check.h"

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

const ConvAlgorithm& ConvPlan::algorithm(cudnnHandle_t handle, ConvDirection direction,
                                         KernelMode mode, std::vector<LedgerEntry>& ledger) {
  const auto slot = std::make_pair(direction, mode);
  if (auto it = chosen_.find(slot); it != chosen_.end()) return it->second;

  const ConvAlgorithmPolicy policy = conv_algorithm_policy(mode, direction);
  // Before choosing: cudnnFind times, and the workspace query sizes, the algorithm under the
  // descriptor's math type.
  const cudnnMathType_t math = set_math(policy.math);
  LedgerEntry entry;
  entry.layer = key_;
  entry.direction = to_string(direction);
  ConvAlgorithm chosen;
  if (policy.autotune) {
    bool deterministic = false;
    chosen = choose_autotuned(handle, direction, deterministic);
    entry.deterministic = deterministic;
    entry.chosen_by = "autotuned";
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
  ledger.push_back(std::move(entry));
  return chosen_.emplace(slot, chosen).first->second;
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

ConvAlgorithm ConvPlan::choose_autotuned(cudnnHandle_t handle, ConvDirection direction,
                                         bool& deterministic) const {
  // cudnnFind*Algorithm runs every algorithm on scratch buffers it allocates and returns them
  // fastest first. Results that failed or that would use tensor cores (TF32) are skipped; the run
  // itself uses the descriptor's math type (the policy's, CUDNN_FMA_MATH: fp32 FMA) either way,
  // and that is what the ledger records.
  auto pick = [&](const auto* perf, int returned, const char* find) -> ConvAlgorithm {
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      if (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
          perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        continue;
      deterministic = perf[i].determinism == CUDNN_DETERMINISTIC;
      return ConvAlgorithm{static_cast<int>(perf[i].algo), perf[i].memory};
    }
    throw CudaError(describe(key_, direction) + ": " + find + " found no fp32 (non-TF32) " +
                    "algorithm that runs this shape");
  };
  int returned = 0;
  switch (direction) {
    case ConvDirection::forward: {
      std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
      RA_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(
          handle, x(), w(), conv(), y(), int(perf.size()), &returned, perf.data()));
      return pick(perf.data(), returned, "cudnnFindConvolutionForwardAlgorithm");
    }
    case ConvDirection::backward_data: {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
      RA_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
          handle, w(), y(), conv(), x(), int(perf.size()), &returned, perf.data()));
      return pick(perf.data(), returned, "cudnnFindConvolutionBackwardDataAlgorithm");
    }
    case ConvDirection::backward_filter: {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
          perf{};
      RA_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
          handle, x(), y(), conv(), w(), int(perf.size()), &returned, perf.data()));
      return pick(perf.data(), returned, "cudnnFindConvolutionBackwardFilterAlgorithm");
    }
  }
  throw CudaError(describe(key_, direction) + ": unknown convolution direction");
}

}  // namespace ra::backend::cuda
