// maxpool2d. Forward writes each output (and its argmax) from one task. Backward scatters dy
// through argmax; overlapping windows (stride < pool) send several dy values to one dx element,
// which makes it a reduction: deterministic adds them plane by plane in output order,
// nondeterministic splits the output rows between tasks that add with atomics. Disjoint windows
// (stride >= pool, as in Keras' 2x2/2) reduce nothing, so there both modes take the one-writer
// path.
#include <algorithm>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/maxpool_2x2.h"
#include "backend/cpu/parallel_for.h"
#include "backend/cpu/reduction.h"
#include "core/error.h"

namespace ra::backend {
namespace {

std::int64_t plane_size(const PoolGeometry& g) {
  return std::int64_t(g.h) * g.w;
}
std::int64_t pooled_size(const PoolGeometry& g) {
  return std::int64_t(g.p) * g.q;
}
std::int64_t planes(const PoolGeometry& g) {
  return std::int64_t(g.n) * g.c;
}

// Planes per task: about kElementBlock input elements per task.
std::int64_t planes_per_task(const PoolGeometry& g) {
  return std::max<std::int64_t>(1, cpu::kElementBlock / std::max<std::int64_t>(1, plane_size(g)));
}

[[noreturn]] void throw_bad_argmax(std::int64_t i, std::int32_t a) {
  throw RuntimeFailure("maxpool2d_backward: argmax[" + std::to_string(i) +
                       "] = " + std::to_string(a) + " lies outside the input plane of that output");
}

// Checked dx index of output i of `plane`; -1 (skip) for a window that held only padding.
std::int64_t target_of(const PoolGeometry& g, const std::int32_t* argmax, std::int64_t plane,
                       std::int64_t i) {
  const std::int32_t a = argmax[i];
  if (a < 0) return -1;
  if (a < plane * plane_size(g) || a >= (plane + 1) * plane_size(g)) throw_bad_argmax(i, a);
  return a;
}

// The offset of output i's argmax in its 2x2 window, whose top-left element has flat index
// `corner`: 0, 1, W or W + 1; anything else is an argmax no 2x2/2 forward pass wrote.
std::int64_t offset_in_window(const std::int32_t* argmax, std::int64_t i, std::int64_t corner,
                              std::int64_t W) {
  const std::int64_t offset = std::int64_t(argmax[i]) - corner;
  if (offset != 0 && offset != 1 && offset != W && offset != W + 1) {
    throw_bad_argmax(i, argmax[i]);
  }
  return offset;
}

// Backward of maxpool_plane_2x2 for one plane: each 2x2 block of dx is written once, the
// argmax's element = +0 + dy (the general path's add into a zeroed dx, -0 included) and the
// other three +0, row pair by row pair; rows and columns no window covers get +0. One pass of
// sequential stores instead of a fill followed by scattered adds.
void unpool_plane_2x2(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                      const float* relu_gate, std::int64_t plane, float* dx) {
  const std::int64_t W = g.w, base = plane * plane_size(g);
  const std::int64_t out_base = plane * pooled_size(g);
  float* dx_plane = dx + base;
  for (std::int64_t p = 0; p < g.p; ++p) {
    float* __restrict__ top = dx_plane + 2 * p * W;
    float* __restrict__ bottom = top + W;
    const std::int64_t row_index = base + 2 * p * W;
    std::int64_t q = 0;
#if defined(__SSE2__)
    // 4 outputs at a time: the masks of the argmax's offset in its block select v into the even
    // and odd columns of both rows, interleaved into 8 consecutive floats per row.
    const __m128i lane_columns = _mm_setr_epi32(0, 2, 4, 6);
    const __m128i offsets[4] = {_mm_setzero_si128(), _mm_set1_epi32(1),
                                _mm_set1_epi32(static_cast<std::int32_t>(W)),
                                _mm_set1_epi32(static_cast<std::int32_t>(W + 1))};
    for (; q + 4 <= g.q; q += 4) {
      const std::int64_t i = out_base + p * g.q + q;
      __m128 v = _mm_loadu_ps(dy + i);
      if (relu_gate != nullptr) {
        v = _mm_and_ps(_mm_cmpgt_ps(_mm_loadu_ps(relu_gate + i), _mm_setzero_ps()), v);
      }
      v = _mm_add_ps(_mm_setzero_ps(), v);
      const __m128i first =
          _mm_add_epi32(_mm_set1_epi32(static_cast<std::int32_t>(row_index + 2 * q)), lane_columns);
      const __m128i offset =
          _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(argmax + i)), first);
      __m128 picked[4];
      __m128i any = _mm_setzero_si128();
      for (int k = 0; k < 4; ++k) {
        const __m128i hit = _mm_cmpeq_epi32(offset, offsets[k]);
        any = _mm_or_si128(any, hit);
        picked[k] = _mm_and_ps(_mm_castsi128_ps(hit), v);
      }
      if (_mm_movemask_epi8(any) != 0xFFFF) {
        for (int k = 0; k < 4; ++k) offset_in_window(argmax, i + k, row_index + 2 * (q + k), W);
      }
      _mm_storeu_ps(top + 2 * q, _mm_unpacklo_ps(picked[0], picked[1]));
      _mm_storeu_ps(top + 2 * q + 4, _mm_unpackhi_ps(picked[0], picked[1]));
      _mm_storeu_ps(bottom + 2 * q, _mm_unpacklo_ps(picked[2], picked[3]));
      _mm_storeu_ps(bottom + 2 * q + 4, _mm_unpackhi_ps(picked[2], picked[3]));
    }
#endif
    for (; q < g.q; ++q) {
      const std::int64_t i = out_base + p * g.q + q;
      const float v =
          0.0f + (relu_gate == nullptr ? dy[i] : cpu::relu_backward(relu_gate[i], dy[i]));
      const std::int64_t offset = offset_in_window(argmax, i, row_index + 2 * q, W);
      top[2 * q] = offset == 0 ? v : 0.0f;
      top[2 * q + 1] = offset == 1 ? v : 0.0f;
      bottom[2 * q] = offset == W ? v : 0.0f;
      bottom[2 * q + 1] = offset == W + 1 ? v : 0.0f;
    }
    std::fill(top + 2 * g.q, top + W, 0.0f);  // an odd last column
    std::fill(bottom + 2 * g.q, bottom + W, 0.0f);
  }
  std::fill(dx_plane + 2 * g.p * W, dx_plane + plane_size(g), 0.0f);  // an odd last row
}

// Windows that cannot overlap (stride >= pool): each dx element receives at most one dy value,
// so the backward pass is a scatter, not a reduction, and both modes give the same bits.
bool windows_disjoint(const PoolGeometry& g) {
  return g.stride_h >= g.pool_h && g.stride_w >= g.pool_w;
}

}  // namespace

void CpuOps::maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                               std::int32_t* argmax) {
  if (g.x_size() > std::numeric_limits<std::int32_t>::max()) {
    throw RuntimeFailure("maxpool2d: input of " + std::to_string(g.x_size()) +
                         " elements is too large for int32 argmax indices");
  }
  const std::int64_t per_task = planes_per_task(g);
  const bool plain_2x2 = cpu::is_plain_2x2(g);  // a property of g: decided once, not per plane
  cpu::parallel_for(pool_, (planes(g) + per_task - 1) / per_task, [&](std::int64_t task, int) {
    const std::int64_t end = std::min(planes(g), (task + 1) * per_task);
    for (std::int64_t plane = task * per_task; plane < end; ++plane) {
      const std::int64_t base = plane * plane_size(g);
      if (plain_2x2) {
        cpu::maxpool_plane_2x2(g, x + base, base, y + plane * pooled_size(g),
                               argmax + plane * pooled_size(g));
        continue;
      }
      for (std::int64_t p = 0; p < g.p; ++p) {
        const std::int64_t h0 = p * g.stride_h - g.pad_top;
        const std::int64_t h_begin = std::max<std::int64_t>(0, h0);
        const std::int64_t h_end = std::min<std::int64_t>(g.h, h0 + g.pool_h);
        for (std::int64_t q = 0; q < g.q; ++q) {
          const std::int64_t w0 = q * g.stride_w - g.pad_left;
          const std::int64_t w_begin = std::max<std::int64_t>(0, w0);
          const std::int64_t w_end = std::min<std::int64_t>(g.w, w0 + g.pool_w);
          // Padding never wins: only positions inside the image are candidates. A window of
          // padding only (impossible for valid geometries) yields -inf and argmax -1.
          float best = -std::numeric_limits<float>::infinity();
          std::int64_t best_index = -1;
          for (std::int64_t ih = h_begin; ih < h_end; ++ih) {
            for (std::int64_t iw = w_begin; iw < w_end; ++iw) {
              const std::int64_t index = base + ih * g.w + iw;
              // Strict >: the first maximum in row-major window order wins ties.
              if (best_index < 0 || x[index] > best) {
                best = x[index];
                best_index = index;
              }
            }
          }
          const std::int64_t out = plane * pooled_size(g) + p * g.q + q;
          y[out] = best;
          argmax[out] = static_cast<std::int32_t>(best_index);
        }
      }
    }
  });
}

void CpuOps::maxpool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                                const float* relu_gate, float* dx, KernelMode mode) {
  // dy[i] through the gate: +0 where the pooled value is not positive (the relu backward's 0).
  const auto gated = [&](std::int64_t i) {
    return relu_gate == nullptr ? dy[i] : cpu::relu_backward(relu_gate[i], dy[i]);
  };
  const std::int64_t per_task = planes_per_task(g);
  const std::int64_t plane_tasks = (planes(g) + per_task - 1) / per_task;
  if (cpu::is_plain_2x2(g)) {
    cpu::parallel_for(pool_, plane_tasks, [&](std::int64_t task, int) {
      const std::int64_t end = std::min(planes(g), (task + 1) * per_task);
      for (std::int64_t plane = task * per_task; plane < end; ++plane) {
        unpool_plane_2x2(g, dy, argmax, relu_gate, plane, dx);
      }
    });
    return;
  }
  if (mode != KernelMode::nondeterministic || windows_disjoint(g)) {
    // Each plane's dx is written by one task, adding dy in output order.
    cpu::parallel_for(pool_, plane_tasks, [&](std::int64_t task, int) {
      const std::int64_t end = std::min(planes(g), (task + 1) * per_task);
      for (std::int64_t plane = task * per_task; plane < end; ++plane) {
        std::fill_n(dx + plane * plane_size(g), plane_size(g), 0.0f);
        for (std::int64_t i = plane * pooled_size(g); i < (plane + 1) * pooled_size(g); ++i) {
          const std::int64_t target = target_of(g, argmax, plane, i);
          if (target >= 0) dx[target] += gated(i);
        }
      }
    });
    return;
  }
  cpu::parallel_for(pool_, plane_tasks, [&](std::int64_t task, int) {
    const std::int64_t begin = task * per_task * plane_size(g);
    const std::int64_t end = std::min(planes(g), (task + 1) * per_task) * plane_size(g);
    std::fill(dx + begin, dx + end, 0.0f);
  });
  // Output rows (all planes' rows in one sequence) in runs of about 2048 outputs per task; windows
  // of neighbouring rows overlap when stride < pool, so runs that meet race on those dx rows.
  const std::int64_t rows = planes(g) * g.p;
  const std::int64_t rows_per_task = std::max<std::int64_t>(1, 2048 / std::max(1, g.q));
  cpu::parallel_for(pool_, (rows + rows_per_task - 1) / rows_per_task, [&](std::int64_t task, int) {
    const std::int64_t row_end = std::min(rows, (task + 1) * rows_per_task);
    for (std::int64_t row = task * rows_per_task; row < row_end; ++row) {
      const std::int64_t plane = row / std::max(1, g.p);
      for (std::int64_t i = row * g.q; i < (row + 1) * g.q; ++i) {
        const std::int64_t target = target_of(g, argmax, plane, i);
        if (target >= 0) cpu::atomic_add(dx + target, gated(i));
      }
    }
  });
}

}  // namespace ra::backend
