// Activations over `count` floats, '=' and one writer per element (deterministic). The formulas
// are those of the CPU backend (lib/backend/cpu/cpu_elementwise.cpp), built without FMA
// contraction (--fmad=false) like the host (-ffp-contract=off):
//   relu and none, and every backward, give the CPU's bits exactly (the same fp32 operations in
//   the same order); tanh and sigmoid forward differ from it only by the libm ulps of CUDA's
//   tanhf / expf (documented max 2 ulp each) against glibc's.
#include "kernels/activation.cuh"
#include "kernels/launch_config.cuh"

namespace ra::kernels {
namespace {

// Logistic function without overflow, as on the CPU: expf only ever sees a non-positive number.
__device__ __forceinline__ float sigmoid(float v) {
  if (v >= 0.0f) return 1.0f / (1.0f + expf(-v));
  const float e = expf(v);
  return e / (1.0f + e);
}

__device__ __forceinline__ float forward_value(int activation, float v) {
  switch (activation) {
    case kActivationRelu:
      return v > 0.0f ? v : 0.0f;
    case kActivationTanh:
      return tanhf(v);
    case kActivationSigmoid:
      return sigmoid(v);
    default:
      return v;
  }
}

__device__ __forceinline__ float backward_value(int activation, float y, float dy) {
  switch (activation) {
    case kActivationRelu:
      return y > 0.0f ? dy : 0.0f;
    case kActivationTanh:
      return dy * (1.0f - y * y);
    case kActivationSigmoid:
      return dy * (y * (1.0f - y));
    default:
      return dy;
  }
}

// The switch is uniform over the grid (one activation per launch), so it costs no divergence.
__global__ void activation_forward_kernel(int activation, std::int64_t count, const float* x,
                                          float* y) {
  for (std::int64_t i = detail::grid_first(); i < count; i += detail::grid_stride()) {
    y[i] = forward_value(activation, x[i]);
  }
}

__global__ void activation_backward_kernel(int activation, std::int64_t count, const float* y,
                                           const float* dy, float* dx) {
  for (std::int64_t i = detail::grid_first(); i < count; i += detail::grid_stride()) {
    dx[i] = backward_value(activation, y[i], dy[i]);
  }
}

}  // namespace

void activation_forward(cudaStream_t stream, int activation, std::int64_t count, const float* x,
                        float* y) {
  if (count <= 0) return;
  if (activation == kActivationNone && x == y) return;  // identity in place: nothing to write
  activation_forward_kernel<<<detail::grid_for(count), detail::kThreads, 0, stream>>>(activation,
                                                                                      count, x, y);
}

void activation_backward(cudaStream_t stream, int activation, std::int64_t count, const float* y,
                         const float* dy, float* dx) {
  if (count <= 0) return;
  if (activation == kActivationNone && dy == dx) return;
  activation_backward_kernel<<<detail::grid_for(count), detail::kThreads, 0, stream>>>(
      activation, count, y, dy, dx);
}

}  // namespace ra::kernels
