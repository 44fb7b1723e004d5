#pragma once
// The pool's side of a conv + max-pool backward (Ops::conv2d_backward_maxpool), shared by the Ops
// interface and the CPU backend's fused path (cpu/direct_conv.h) without either including the
// other.
#include <cstdint>

namespace ra::backend {

// The arguments of maxpool2d_backward but its output.
struct MaxPoolGradient {
  const float* dy = nullptr;             // the pooled output's gradient
  const std::int32_t* argmax = nullptr;  // from the forward pass
  const float* relu_gate = nullptr;      // the pooled output, or none
};

}  // namespace ra::backend
