#pragma once
// The residual add: y = a + b over `count` floats ('='), one thread per element: the CPU's bits.
// a, b and y may alias.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ra::kernels {

void residual_add(cudaStream_t stream, std::int64_t count, const float* a, const float* b,
                  float* y);

}  // namespace ra::kernels
