#pragma once
// maxpool backward's deterministic per-thread work, written once for nvcc (kernels/maxpool.cu
// launches it) and the host (the host twin of tests/backend_cuda/maxpool_backward_host_test.cpp
// runs the very same functions over every thread index). No atomics: each dx element has exactly
// one writer, which adds its dy values in increasing output order from 0.0f, the order of the CPU
// backend's scatter (dx = 0, then dx[argmax[i]] += g(i) for i = 0, 1, ...), hence its bits.
//
//   g(i) = dy[i] when gate is nullptr or gate[i] > 0, else 0.0f (the relu backward of the layer
//   before, fused: kernels/maxpool.cuh).
//
//   maxpool_backward_owned_cells  disjoint windows (stride >= pool in both dimensions, Keras'
//       2x2/2): one thread per OUTPUT o writes every dx cell of the block o owns, 0.0f + g(o) at
//       argmax[o] and 0.0f elsewhere ('='). Output (p, q) owns rows [p * stride_h - pad_top,
//       (p + 1) * stride_h - pad_top) and the matching columns, clipped to the image; the last
//       output row (column) also owns the rows (columns) below (right of) every window. The blocks
//       tile the plane, and window (p, q) lies inside block (p, q) because pool <= stride, so each
//       dx cell gets at most one dy value and exactly one writer: no reduction, no zero-fill pass.
//       Cost per output of a 2x2/2 pool: 3 coalesced reads and 4 writes, no divisions but the
//       output's own (p, q, plane).
//   maxpool_backward_gathered_cell  any windows (overlapping too): one thread per INPUT cell
//       sums g over the windows that contain it and chose it, in increasing output order.
//
// All index arithmetic is int: the caller requires x_size() and y_size() <= INT32_MAX (argmax
// holds int32 flat indices), and 64-bit division costs a GPU several times more than 32-bit (the
// 64-bit gather took 0.071 ms against the atomic scatter's 0.021 ms on an H100: fixtures
// h100-2026-11-27, `bench --device cuda`, maxpool2d_backward).
#include <cstdint>

#include "backend/geometry.h"
#include "core/host_device.h"
#include "core/integer_math.h"

namespace ra::kernels {

// Whether no two windows share a cell: the owner-per-block path applies.
RA_HOST_DEVICE bool pool_windows_disjoint(const ra::backend::PoolGeometry& g) {
  return g.stride_h >= g.pool_h && g.stride_w >= g.pool_w;
}

RA_HOST_DEVICE float pool_gated_dy(const float* dy, const float* gate, int out) {
  return gate == nullptr || gate[out] > 0.0f ? dy[out] : 0.0f;
}

// The cells [begin, end) along one dimension that output `o` of `outputs` owns (see above).
struct PoolCellRange {
  int begin = 0, end = 0;
};
RA_HOST_DEVICE PoolCellRange pool_owned_range(int o, int outputs, int stride, int pad, int extent) {
  PoolCellRange r;
  r.begin = o * stride - pad;
  r.end = o == outputs - 1 ? extent : (o + 1) * stride - pad;
  if (r.begin < 0) r.begin = 0;
  if (r.end > extent) r.end = extent;
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

RA_HOST_DEVICE void maxpool_backward_owned_cells(const ra::backend::PoolGeometry& g, int out,
                                                 const float* dy, const float* gate,
                                                 const std::int32_t* argmax, float* dx) {
  const int q = out % g.q;
  const int p = (out / g.q) % g.p;
  const int plane = out / (g.p * g.q);
  const PoolCellRange rows = pool_owned_range(p, g.p, g.stride_h, g.pad_top, g.h);
  const PoolCellRange cols = pool_owned_range(q, g.q, g.stride_w, g.pad_left, g.w);
  const int winner = argmax[out];  // -1 for a window of padding only: no cell matches
  // 0.0f + g, not g: the CPU adds into a zero, which turns -0.0f into +0.0f.
  const float value = 0.0f + pool_gated_dy(dy, gate, out);
  const int base = plane * g.h * g.w;
  for (int r = rows.begin; r < rows.end; ++r) {
    for (int c = cols.begin; c < cols.end; ++c) {
      const int cell = base + r * g.w + c;
      dx[cell] = cell == winner ? value : 0.0f;
    }
  }
}

// First and last output coordinate whose window [o * stride - pad, o * stride - pad + pool)
// contains input coordinate i: o * stride <= i + pad < o * stride + pool.
RA_HOST_DEVICE int pool_first_window(int i, int stride, int pad, int pool) {
  const int lowest = i + pad - pool + 1;  // o * stride >= lowest
  return lowest <= 0 ? 0 : ra::ceil_div(lowest, stride);
}
RA_HOST_DEVICE int pool_last_window(int i, int stride, int pad, int outputs) {
  const int last = (i + pad) / stride;  // i + pad >= 0: pads are non-negative
  return last < outputs - 1 ? last : outputs - 1;
}

RA_HOST_DEVICE void maxpool_backward_gathered_cell(const ra::backend::PoolGeometry& g, int in,
                                                   const float* dy, const float* gate,
                                                   const std::int32_t* argmax, float* dx) {
  const int iw = in % g.w;
  const int ih = (in / g.w) % g.h;
  const int plane = in / (g.h * g.w);
  const int p_end = pool_last_window(ih, g.stride_h, g.pad_top, g.p);
  const int q_begin = pool_first_window(iw, g.stride_w, g.pad_left, g.pool_w);
  const int q_end = pool_last_window(iw, g.stride_w, g.pad_left, g.q);
  float sum = 0.0f;
  for (int p = pool_first_window(ih, g.stride_h, g.pad_top, g.pool_h); p <= p_end; ++p) {
    for (int q = q_begin; q <= q_end; ++q) {
      const int out = (plane * g.p + p) * g.q + q;
      if (argmax[out] == in) sum += pool_gated_dy(dy, gate, out);
    }
  }
  dx[in] = sum;
}

}  // namespace ra::kernels
