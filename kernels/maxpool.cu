// maxpool2d: x[N,C,H,W] -> y[N,C,P,Q] and argmax[N,C,P,Q] (flat int32 indices into x).
//   forward: one thread per output, '='; the CPU's window order and tie rule: bit-identical.
//   backward deterministic: one thread per dx element, '='; gathers dy over the windows that
//     contain the element, in increasing output index (p, then q), from 0.0f - the order of the
//     CPU's scatter, so the same bits. No atomics.
//   backward nondeterministic: dx = 0, then one thread per output: atomicAdd(dx + argmax, dy).
//   backward with a relu gate: each dy[i] enters as gate[i] > 0 ? dy[i] : 0.0f (the relu backward
//     of the layer before), read where it is added: the values and order of a separate gating
//     pass into a buffer, without the buffer.
#include <cmath>

#include "core/integer_math.h"
#include "kernels/fill.cuh"
#include "kernels/launch_config.cuh"
#include "kernels/maxpool.cuh"

namespace ra::kernels {
namespace {

using ra::backend::PoolGeometry;

__device__ __forceinline__ std::int64_t max64(std::int64_t a, std::int64_t b) {
  return a > b ? a : b;
}
__device__ __forceinline__ std::int64_t min64(std::int64_t a, std::int64_t b) {
  return a < b ? a : b;
}

// (Sizes come as arguments: PoolGeometry's x_size() / y_size() are host functions.)
__global__ void maxpool_forward_kernel(PoolGeometry g, std::int64_t outputs, const float* x,
                                       float* y, std::int32_t* argmax) {
  for (std::int64_t out = detail::grid_first(); out < outputs; out += detail::grid_stride()) {
    const std::int64_t q = out % g.q;
    const std::int64_t p = (out / g.q) % g.p;
    const std::int64_t plane = out / (std::int64_t(g.p) * g.q);
    const std::int64_t base = plane * g.h * g.w;
    const std::int64_t h0 = p * g.stride_h - g.pad_top;
    const std::int64_t w0 = q * g.stride_w - g.pad_left;
    const std::int64_t h_end = min64(g.h, h0 + g.pool_h);
    const std::int64_t w_end = min64(g.w, w0 + g.pool_w);
    // Only positions inside the image are candidates, so padding never wins.
    float best = -INFINITY;
    std::int64_t best_index = -1;
    for (std::int64_t ih = max64(0, h0); ih < h_end; ++ih) {
      for (std::int64_t iw = max64(0, w0); iw < w_end; ++iw) {
        const std::int64_t index = base + ih * g.w + iw;
        // Strict >: the first maximum in row-major window order wins ties.
        if (best_index < 0 || x[index] > best) {
          best = x[index];
          best_index = index;
        }
      }
    }
    y[out] = best;
    argmax[out] = static_cast<std::int32_t>(best_index);
  }
}

// dy[out] through the relu gate (nullptr: none): activation.cu's relu backward, y > 0 ? dy : 0.
__device__ __forceinline__ float gated_dy(const float* dy, const float* gate, std::int64_t out) {
  return gate == nullptr || gate[out] > 0.0f ? dy[out] : 0.0f;
}

// First and last output coordinate whose window [o * stride - pad, o * stride - pad + pool)
// contains input coordinate i: o * stride <= i + pad < o * stride + pool.
__device__ __forceinline__ std::int64_t first_window(std::int64_t i, int stride, int pad,
                                                     int pool) {
  const std::int64_t lowest = i + pad - pool + 1;  // o * stride >= lowest
  return lowest <= 0 ? 0 : ra::ceil_div(lowest, stride);
}
__device__ __forceinline__ std::int64_t last_window(std::int64_t i, int stride, int pad,
                                                    int extent) {
  return min64(extent - 1, (i + pad) / stride);  // i + pad >= 0: pads are non-negative
}

__global__ void maxpool_backward_gather_kernel(PoolGeometry g, std::int64_t inputs, const float* dy,
                                               const float* gate, const std::int32_t* argmax,
                                               float* dx) {
  const std::int64_t plane_outputs = std::int64_t(g.p) * g.q;
  for (std::int64_t in = detail::grid_first(); in < inputs; in += detail::grid_stride()) {
    const std::int64_t iw = in % g.w;
    const std::int64_t ih = (in / g.w) % g.h;
    const std::int64_t plane = in / (std::int64_t(g.h) * g.w);
    const std::int64_t p_end = last_window(ih, g.stride_h, g.pad_top, g.p);
    const std::int64_t q_begin = first_window(iw, g.stride_w, g.pad_left, g.pool_w);
    const std::int64_t q_end = last_window(iw, g.stride_w, g.pad_left, g.q);
    float sum = 0.0f;
    for (std::int64_t p = first_window(ih, g.stride_h, g.pad_top, g.pool_h); p <= p_end; ++p) {
      for (std::int64_t q = q_begin; q <= q_end; ++q) {
        const std::int64_t out = plane * plane_outputs + p * g.q + q;
        if (argmax[out] == in) sum += gated_dy(dy, gate, out);
      }
    }
    dx[in] = sum;
  }
}

__global__ void maxpool_backward_scatter_kernel(std::int64_t outputs, const float* dy,
                                                const float* gate, const std::int32_t* argmax,
                                                float* dx) {
  for (std::int64_t out = detail::grid_first(); out < outputs; out += detail::grid_stride()) {
    const std::int32_t target = argmax[out];
    if (target >= 0) atomicAdd(dx + target, gated_dy(dy, gate, out));  // -1: padding only
  }
}

}  // namespace

void maxpool_forward(cudaStream_t stream, const PoolGeometry& g, const float* x, float* y,
                     std::int32_t* argmax) {
  const std::int64_t outputs = g.y_size();
  if (outputs <= 0) return;
  maxpool_forward_kernel<<<detail::grid_for(outputs), detail::kThreads, 0, stream>>>(g, outputs, x,
                                                                                     y, argmax);
}

void maxpool_backward(cudaStream_t stream, const PoolGeometry& g, const float* dy,
                      const float* gate, const std::int32_t* argmax, float* dx,
                      bool deterministic) {
  const std::int64_t inputs = g.x_size();
  if (inputs <= 0) return;
  if (deterministic) {
    maxpool_backward_gather_kernel<<<detail::grid_for(inputs), detail::kThreads, 0, stream>>>(
        g, inputs, dy, gate, argmax, dx);
    return;
  }
  fill(stream, dx, inputs, 0.0f);
  const std::int64_t outputs = g.y_size();
  if (outputs <= 0) return;
  maxpool_backward_scatter_kernel<<<detail::grid_for(outputs), detail::kThreads, 0, stream>>>(
      outputs, dy, gate, argmax, dx);
}

}  // namespace ra::kernels
