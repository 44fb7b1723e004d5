#pragma once
// x[i] = value for i in [0, count) ('='). No reduction: deterministic.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ra::kernels {

void fill(cudaStream_t stream, float* x, std::int64_t count, float value);

}  // namespace ra::kernels
