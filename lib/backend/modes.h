#pragma once
// The choices an op takes besides its tensors, in the backend's own terms. The experiment spec
// (spec/spec.h) has enums of the same names for what a user writes; backend does not include the
// spec, so the layers that turn a spec into op calls convert at that boundary (nn/backend_modes.h).
// kernels/ passes Activation to device code as its int value: keep the declaration order.

namespace ra::backend {

// The activation an op applies to its output (fused into conv2d / dense stores) or differentiates.
enum class Activation { none, relu, tanh, sigmoid };

// How an op that reduces (sums many products into one value) orders its sums (ops.h):
// deterministic: a reduction tree fixed by the data size, the same bits for any thread count;
// nondeterministic: per-worker partials added in completion order (atomic adds);
// autotune: (CUDA) convolution algorithms chosen by timing at start-up, as cudnn.benchmark=True
// does; the CPU backend has no algorithm to choose and runs its deterministic path;
// batch_invariant: deterministic, and each sample's result independent of the batch's size and
// other samples (docs/invariance.md): no algorithm, blocking or split chosen by the batch size.
// A reduction over the batch (a weight gradient) runs its deterministic path: it cannot be
// independent of the batch it sums.
enum class KernelMode { deterministic, nondeterministic, autotune, batch_invariant };

// "none", "relu", "tanh", "sigmoid": the names the spec uses.
constexpr const char* to_string(Activation activation) {
  switch (activation) {
    case Activation::none:
      return "none";
    case Activation::relu:
      return "relu";
    case Activation::tanh:
      return "tanh";
    case Activation::sigmoid:
      return "sigmoid";
  }
  return "?";
}

// "deterministic", "nondeterministic", "autotune", "batch_invariant": the names the spec and the
// trace use.
constexpr const char* to_string(KernelMode mode) {
  switch (mode) {
    case KernelMode::deterministic:
      return "deterministic";
    case KernelMode::nondeterministic:
      return "nondeterministic";
    case KernelMode::autotune:
      return "autotune";
    case KernelMode::batch_invariant:
      return "batch_invariant";
  }
  return "?";
}

}  // namespace ra::backend
