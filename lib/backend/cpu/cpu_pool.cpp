// maxpool2d. Forward writes each output (and its argmax) from one task. Backward scatters dy
// through argmax; overlapping windows (stride < pool) send several dy values to one dx element,
// which makes it a reduction: deterministic adds them plane by plane in output order,
// nondeterministic splits the output rows between tasks that add with atomics. Disjoint windows
// (stride >= pool, as in Keras' 2x2/2) reduce nothing, so there both modes take the one-writer
// path.
#include <algorithm>
#include <limits>
#include <string>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/pool/maxpool_2x2.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "core/error.h"
#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

using cpu::plane_size;
using cpu::pooled_size;

std::int64_t planes(const PoolGeometry& g) {
  return std::int64_t(g.n) * g.c;
}

// Planes per task: about kElementBlock input elements per task.
std::int64_t planes_per_task(const PoolGeometry& g) {
  return std::max<std::int64_t>(1, cpu::kElementBlock / std::max<std::int64_t>(1, plane_size(g)));
}

// Checked dx index of output i of `plane`; -1 (skip) for a window that held only padding.
std::int64_t target_of(const PoolGeometry& g, const std::int32_t* argmax, std::int64_t plane,
                       std::int64_t i) {
  const std::int32_t a = argmax[i];
  if (a < 0) return -1;
  if (a < plane * plane_size(g) || a >= (plane + 1) * plane_size(g)) cpu::throw_bad_argmax(i, a);
  return a;
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
  const cpu::Isa isa = cpu::active_isa();
  cpu::parallel_for(pool_, ceil_div(planes(g), per_task), [&](std::int64_t task, int) {
    const std::int64_t end = std::min(planes(g), (task + 1) * per_task);
    for (std::int64_t plane = task * per_task; plane < end; ++plane) {
      const std::int64_t base = plane * plane_size(g);
      if (plain_2x2) {
        cpu::maxpool_plane_2x2(g, x + base, base, y + plane * pooled_size(g),
                               argmax + plane * pooled_size(g), isa);
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
  const std::int64_t plane_tasks = ceil_div(planes(g), per_task);
  if (cpu::is_plain_2x2(g)) {
    cpu::parallel_for(pool_, plane_tasks, [&](std::int64_t task, int) {
      const std::int64_t end = std::min(planes(g), (task + 1) * per_task);
      for (std::int64_t plane = task * per_task; plane < end; ++plane) {
        cpu::unpool_plane_2x2(g, dy, argmax, relu_gate, plane, dx + plane * plane_size(g), g.w);
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
  cpu::parallel_for(pool_, ceil_div(rows, rows_per_task), [&](std::int64_t task, int) {
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

}  // namespace ra::backend::cpu
