// maxpool2d: x[N,C,H,W] -> y[N,C,P,Q] and argmax[N,C,P,Q] (flat int32 indices into x).
//   forward: one thread per output, '='; the CPU's window order and tie rule: bit-identical.
//   backward deterministic ('=', no atomics, the CPU's scatter order hence its bits; the
//     per-thread work is kernels/maxpool_backward.h, shared with its host twin): disjoint windows
//     (stride >= pool) run one thread per output that writes the block of dx cells it owns;
//     overlapping windows run one thread per dx element that gathers dy over the windows that
//     contain it, in increasing output index (p, then q), from 0.0f.
//   backward nondeterministic: dx = 0, then one thread per output: atomicAdd(dx + argmax, dy).
//   backward with a relu gate: each dy[i] enters as gate[i] > 0 ? dy[i] : 0.0f (the relu backward
//     of the layer before), read where it is added: the values and order of a separate gating
//     pass into a buffer, without the buffer.
#include <cmath>

#include "core/integer_math.h"
#include "kernels/fill.cuh"
#include "kernels/launch_config.cuh"
#include "kernels/maxpool.cuh"
#include "kernels/maxpool_backward.h"

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

// One thread per output of disjoint windows, or per input cell: kernels/maxpool_backward.h.
// The caller keeps x_size() and y_size() within int32, so the casts are exact.
__global__ void maxpool_backward_owner_kernel(PoolGeometry g, std::int64_t outputs, const float* dy,
                                              const float* gate, const std::int32_t* argmax,
                                              float* dx) {
  for (std::int64_t out = detail::grid_first(); out < outputs; out += detail::grid_stride()) {
    maxpool_backward_owned_cells(g, static_cast<int>(out), dy, gate, argmax, dx);
  }
}

__global__ void maxpool_backward_gather_kernel(PoolGeometry g, std::int64_t inputs, const float* dy,
                                               const float* gate, const std::int32_t* argmax,
                                               float* dx) {
  for (std::int64_t in = detail::grid_first(); in < inputs; in += detail::grid_stride()) {
    maxpool_backward_gathered_cell(g, static_cast<int>(in), dy, gate, argmax, dx);
  }
}

__global__ void maxpool_backward_scatter_kernel(std::int64_t outputs, const float* dy,
                                                const float* gate, const std::int32_t* argmax,
                                                float* dx) {
  for (std::int64_t out = detail::grid_first(); out < outputs; out += detail::grid_stride()) {
    const std::int32_t target = argmax[out];
    if (target >= 0)
      atomicAdd(dx + target, pool_gated_dy(dy, gate, static_cast<int>(out)));  // -1: padding only
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
  const std::int64_t outputs = g.y_size();
  if (deterministic && pool_windows_disjoint(g) && outputs > 0) {
    maxpool_backward_owner_kernel<<<detail::grid_for(outputs), detail::kThreads, 0, stream>>>(
        g, outputs, dy, gate, argmax, dx);
    return;
  }
  if (deterministic) {
    maxpool_backward_gather_kernel<<<detail::grid_for(inputs), detail::kThreads, 0, stream>>>(
        g, inputs, dy, gate, argmax, dx);
    return;
  }
  fill(stream, dx, inputs, 0.0f);
  if (outputs <= 0) return;
  maxpool_backward_scatter_kernel<<<detail::grid_for(outputs), detail::kThreads, 0, stream>>>(
      outputs, dy, gate, argmax, dx);
}

}  // namespace ra::kernels
