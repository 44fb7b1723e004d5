#pragma once
// Activations, elementwise over `count` floats; no reduction, one writer per element:
// deterministic. x and y may alias; dy and dx may alias.
//
//   activation_forward   y = act(x)                              ('=')
//   activation_backward  dx = dy * act'(x), from the OUTPUT y:   ('=')
//                        relu: y > 0 ? dy : 0; tanh: dy * (1 - y*y); sigmoid: dy * (y * (1 - y))
//
// `activation` is backend::Activation (backend/modes.h) as an int.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ra::kernels {

// The values of backend::Activation (none, relu, tanh, sigmoid), in declaration order.
inline constexpr int kActivationNone = 0;
inline constexpr int kActivationRelu = 1;
inline constexpr int kActivationTanh = 2;
inline constexpr int kActivationSigmoid = 3;

void activation_forward(cudaStream_t stream, int activation, std::int64_t count, const float* x,
                        float* y);
void activation_backward(cudaStream_t stream, int activation, std::int64_t count, const float* y,
                         const float* dy, float* dx);

}  // namespace ra::kernels
