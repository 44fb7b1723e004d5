#pragma once
// Inverted dropout over `count` floats, elementwise (deterministic), bit-identical to the CPU
// backend (lib/backend/ops.h): element i is kept iff (philox_word(key, i, draw) >> 8) >=
// drop_threshold, an integer compare on the same Philox4x32-10 words.
//
//   dropout_forward   y = keep ? x * scale : 0, mask = keep ? 1 : 0     ('=')
//   dropout_backward  dx = mask != 0 ? dy * scale : 0                  ('='; dy and dx may alias)
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/device_value.h"
#include "rng/philox.h"

namespace ra::kernels {

void dropout_forward(cudaStream_t stream, std::int64_t count, std::uint32_t drop_threshold,
                     float scale, ra::rng::PhiloxKey key, std::uint64_t draw, const float* x,
                     float* y, std::uint8_t* mask);
// The same with the draw read from device memory as the kernel runs (kernels/device_value.h).
void dropout_forward(cudaStream_t stream, std::int64_t count, std::uint32_t drop_threshold,
                     float scale, ra::rng::PhiloxKey key, DeviceValue<std::uint64_t> draw,
                     const float* x, float* y, std::uint8_t* mask);
void dropout_backward(cudaStream_t stream, std::int64_t count, float scale,
                      const std::uint8_t* mask, const float* dy, float* dx);

}  // namespace ra::kernels
