#pragma once
// The cuDNN view of one convolution geometry: its descriptors (made once), how its padding is
// split between cuDNN and a padded copy, and per direction and KernelMode the algorithm chosen
// (algorithm_policy.h: pinned, by cuDNN's heuristic ranking, or autotuned) with its workspace
// size, chosen at the first call and then reused.
//
// Asymmetric padding. cuDNN takes one pad per dimension, applied on both sides; TF-style "same"
// with an even total pads one more at the bottom/right (pad_bottom = pad_top + 1), and the CPU
// tests use any four pads. So each dimension is split:
//     symmetric part  = min(pad_top, pad_bottom)            -> given to cuDNN
//     extra_top       = pad_top - symmetric, extra_bottom = pad_bottom - symmetric
// and the input is copied into a zeroed tensor of height h + extra_top + extra_bottom (same for
// the width) with one cudaMemcpy3DAsync (planes = N * C as depth: no custom kernel). cuDNN then
// runs on that tensor: output row p reads padded row p * stride - symmetric + i, which is input
// row p * stride - pad_top + i, as the geometry says; the output extent is unchanged,
// (h + extra_top + extra_bottom + 2 symmetric - r) / stride + 1 = (h + pad_top + pad_bottom - r) /
// stride + 1. For "same" that is one extra row and column, ~2/28 more input for a 28x28 image.
// backward_data writes the gradient of the padded tensor, then the interior is copied out
// (cropped) into dx; backward_filter reads the padded copy of x. Symmetric geometries copy nothing.
#include <cudnn.h>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/algorithm_pins.h"
#include "backend/cuda/algorithm_policy.h"
#include "backend/cuda/conv_autotune.h"
#include "backend/cuda/cuda_resources.h"
#include "backend/cuda/ledger.h"
#include "backend/cuda/op_execution.h"
#include "backend/geometry.h"
#include "backend/modes.h"

namespace ra::backend::cuda {

struct ConvPadding {
  int pad_h = 0, pad_w = 0;                                              // symmetric, to cuDNN
  int extra_top = 0, extra_left = 0, extra_bottom = 0, extra_right = 0;  // by the padded copy
  int in_h = 0, in_w = 0;  // input extent cuDNN sees: h + extra_top + extra_bottom, ...
  bool copies_input() const noexcept {
    return extra_top != 0 || extra_left != 0 || extra_bottom != 0 || extra_right != 0;
  }
};

ConvPadding split_padding(const ConvGeometry& g);

// The output extent cuDNN computes for one dimension (cudnnGetConvolution2dForwardOutputDim):
// (in + 2 pad - kernel) / stride + 1.
inline int cudnn_output_extent(int in, int pad, int kernel, int stride) {
  return (in + 2 * pad - kernel) / stride + 1;
}

// x [planes, h, w] -> interior of padded [planes, h + top + bottom, w + left + right] (the border
// is not written: the caller zeroes it), and the reverse crop. Queued on `stream`.
void copy_into_padded(cudaStream_t stream, const float* x, float* padded, std::int64_t planes,
                      int h, int w, const ConvPadding& pad);
void copy_from_padded(cudaStream_t stream, const float* padded, float* x, std::int64_t planes,
                      int h, int w, const ConvPadding& pad);

struct ConvAlgorithm {
  int algorithm = 0;  // value of the direction's cuDNN enum
  std::size_t workspace_bytes = 0;
  // The descriptor's math type when the algorithm was chosen, as cuDNN reports it
  // (cudnnGetConvolutionMathType): the one it runs with (conv_for sets it back if needed).
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

// An algorithm chosen for one direction and mode, and its ledger entry, which the op records
// (ledger.record_once) only after the cuDNN call that runs it returned success (op_execution.h).
struct ConvChoice {
  ConvAlgorithm algorithm;
  PendingLedgerEntry ledger;
};

// What cudnnFind*AlgorithmEx times the algorithms on: the op's own operands, so that no
// algorithm reads memory nobody wrote (cudnnFind*Algorithm allocates its own uninitialized
// tensors: compute-sanitizer initcheck reported reads of them on an H200) and the timing sees real
// data. The output is overwritten, as the op does right after. Per direction:
//   forward          first = x (the padded copy if any), second = w,  output = y
//   backward_data    first = w,                          second = dy, output = dx (padded if any)
//   backward_filter  first = x (the padded copy if any), second = dy, output = dw
struct ConvFindOperands {
  const void* first = nullptr;
  const void* second = nullptr;
  void* output = nullptr;
  std::function<void*(std::size_t bytes)> workspace;  // a device buffer of at least `bytes`
};

// The most workspace cudnnFind*AlgorithmEx is given; an algorithm that needs more is reported as
// not run (its perf status) and so not chosen.
inline constexpr std::size_t kFindWorkspaceCap = std::size_t(1) << 30;

class ConvPlan {
 public:
  explicit ConvPlan(const ConvGeometry& g);

  const ConvGeometry& geometry() const noexcept { return g_; }
  const ConvPadding& padding() const noexcept { return padding_; }
  cudnnTensorDescriptor_t x() const noexcept { return x_.get(); }  // the (padded) input
  cudnnTensorDescriptor_t y() const noexcept { return y_.get(); }
  cudnnFilterDescriptor_t w() const noexcept { return w_.get(); }
  cudnnConvolutionDescriptor_t conv() const noexcept { return conv_.get(); }
  // The descriptor with the math type `chosen` was chosen under (one descriptor serves every
  // direction and mode of the geometry, and their policies could set different math types).
  cudnnConvolutionDescriptor_t conv_for(const ConvAlgorithm& chosen);

  // The algorithm of `direction` under `mode`: the pinned one (its workspace size queried, which
  // fails for a shape it does not support: CudaError naming layer, direction and algorithm), the
  // heuristic's (deterministic mode: choose_heuristic), or the fastest by cudnnFind*AlgorithmEx
  // on `operands` for autotune, with the descriptor's math type set from the policy first. Chosen
  // once and kept (the reference stays valid: a map node), with its pending ledger entry (the math
  // type cuDNN reports as set); the caller records that entry once the algorithm ran. With `pins`
  // (backend/algorithm_pins.h), a pinned geometry and direction runs its pin whatever the mode (an
  // unknown or unavailable algorithm: an error naming it), and one without a pin is an InputError
  // when the pins are complete.
  ConvChoice& algorithm(cudnnHandle_t handle, ConvDirection direction, KernelMode mode,
                        const ConvFindOperands& operands, const AlgorithmPins* pins);
  // Forgets every choice (new pins): the next call of each direction chooses again.
  void forget_choices() noexcept { chosen_.clear(); }

 private:
  ConvAlgorithm choose_pinned(cudnnHandle_t handle, ConvDirection direction, int algorithm) const;
  // The choice of a pin (its ledger entry says `chosen_by`), kept as any choice.
  ConvChoice& choose_from_pin(cudnnHandle_t handle, ConvDirection direction, KernelMode mode,
                              const AlgorithmPin& pin, const std::string& chosen_by);
  // The fastest fp32 FMA result of cudnnFind among `candidates` (conv_autotune.h); `measured`
  // gets its perf facts.
  ConvAlgorithm choose_autotuned(cudnnHandle_t handle, ConvDirection direction,
                                 const ConvFindOperands& operands, ConvPerfResult& measured,
                                 AutotuneCandidates candidates) const;
  // The first deterministic fp32 FMA algorithm of cuDNN's heuristic ranking within
  // kHeuristicWorkspaceLimit (conv_heuristic.h), with its workspace size; a CudaError naming
  // every ranked result when none qualifies.
  ConvAlgorithm choose_heuristic(cudnnHandle_t handle, ConvDirection direction) const;
  // The largest workspace any algorithm of `direction` reports for this geometry, at most
  // kFindWorkspaceCap: what cudnnFind*AlgorithmEx is given.
  std::size_t find_workspace_bytes(cudnnHandle_t handle, ConvDirection direction) const;
  // Sets the descriptor's math type (no call when it already holds it) and returns what cuDNN
  // then reports.
  cudnnMathType_t set_math(cudnnMathType_t math);

  ConvGeometry g_;
  std::string key_;
  ConvPadding padding_;
  TensorDescriptor x_, y_;
  FilterDescriptor w_;
  ConvolutionDescriptor conv_;
  cudnnMathType_t math_;  // what conv_ holds (read back from cuDNN)
  std::map<std::pair<ConvDirection, KernelMode>, ConvChoice> chosen_;
};

}  // namespace ra::backend::cuda
