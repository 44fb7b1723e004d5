#pragma once
// The per-plane kernels of the per-channel ops (cpu_channel.cpp: batch normalisation, global
// average pooling), one table per instruction set (simd/isa.h), all from one template
// (channel_lanes.h): the same operations in the same order, so the same bits at every
// instruction set (tests/backend/channel_kernels_test.cpp holds them to it).
#include <cstdint>

#include "backend/cpu/simd/isa.h"

namespace ra::backend::cpu {

struct ChannelKernels {
  // The sum of x[0, count).
  float (*sum)(const float* x, std::int64_t count);
  // sums[0] = sum(a, count), sums[1] = sum(b, count), bit for bit, in one loop.
  void (*sum_pair)(const float* a, const float* b, std::int64_t count, float* sums);
  // The sum of (x - mean)^2.
  float (*centered_square_sum)(const float* x, std::int64_t count, float mean);
  // sums[0] = centered_square_sum(a, count, mean_a), sums[1] = that of b, in one loop.
  void (*centered_square_sum_pair)(const float* a, const float* b, std::int64_t count, float mean_a,
                                   float mean_b, float* sums);
  // *sum_dy = the sum of dy; *sum_dy_centered = the sum of dy (x - mean).
  void (*centered_dot)(const float* x, const float* dy, std::int64_t count, float mean,
                       float* sum_dy, float* sum_dy_centered);
  // y = (x - shift) * scale + offset ('='); y may be x.
  void (*normalize)(const float* x, std::int64_t count, float shift, float scale, float offset,
                    float* y);
  // y = relu((x - shift) * scale + offset) ('='): normalize's value, then activation.h's relu;
  // y may be x.
  void (*normalize_relu)(const float* x, std::int64_t count, float shift, float scale, float offset,
                         float* y);
  // dx = (dy - mean_dy - (x - mean) * slope) * scale ('='); dx may be dy.
  void (*normalize_backward)(const float* x, const float* dy, std::int64_t count, float mean,
                             float mean_dy, float slope, float scale, float* dx);
  // dx = normalize_backward's value + addend ('='): the value rounded, then the add; dx may be dy,
  // not addend.
  void (*normalize_backward_add)(const float* x, const float* dy, std::int64_t count, float mean,
                                 float mean_dy, float slope, float scale, const float* addend,
                                 float* dx);
};

// The kernels compiled for `isa`; it must be supported (isa_supported), else ra::RuntimeFailure.
const ChannelKernels& channel_kernels(Isa isa);
// Those of this process's instruction set (active_isa()).
const ChannelKernels& channel_kernels();

namespace channel_detail {
// Defined in channel_kernels_{avx2,avx512}.cpp.
const ChannelKernels& avx2_kernels();
const ChannelKernels& avx512_kernels();
}  // namespace channel_detail

}  // namespace ra::backend::cpu
