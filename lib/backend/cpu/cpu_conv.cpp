// conv2d as im2col + GEMM, per image (see im2col.h for the column matrix):
//   forward          y_n[K, PQ]    = W[K, CRS] col_n[CRS, PQ]          (+ bias[k] afterwards)
//   backward filter  dW[K, CRS]    = sum_n dY_n[K, PQ] col_n^T[PQ, CRS] (a reduction over the
//   batch) backward data    dcol[CRS, PQ] = W^T[CRS, K] dY_n[K, PQ], then dx_n = col2im(dcol)
//   backward bias    db[k]         = sum over n, p, q of dY[n, k, p, q]
// Flops of the Keras MNIST conv 32->64 k3 on 26x26, batch 128: 2 * 64 * 288 * 576 * 128 = 2.7
// GFLOP per direction, which is why everything here is a blocked GEMM on reused buffers.
#include <algorithm>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/im2col.h"
#include "backend/cpu/parallel_for.h"
#include "backend/cpu/parallel_gemm.h"
#include "backend/cpu/reduction.h"

namespace ra::backend {
namespace {

using cpu::GemmOutput;
using cpu::row_major;
using cpu::transpose_of;

std::int64_t image_size(const ConvGeometry& g) {
  return std::int64_t(g.c) * g.h * g.w;
}

// The column matrix of image n: the image itself for 1x1 stride-1 unpadded convolutions,
// otherwise built in the worker's column buffer.
const float* columns_of(const ConvGeometry& g, const float* x_image, cpu::ScratchArena& scratch,
                        int worker) {
  if (cpu::im2col_is_identity(g)) return x_image;
  float* col = scratch.worker(worker, cpu::WorkerBuffer::columns,
                              static_cast<std::size_t>(cpu::col_rows(g) * cpu::col_cols(g)));
  cpu::im2col(g, x_image, col);
  return col;
}

}  // namespace

void CpuOps::conv2d_forward(const ConvGeometry& g, const float* x, const float* w,
                            const float* bias, float* y) {
  const std::int64_t crs = cpu::col_rows(g), pq = cpu::col_cols(g);
  // One task per image: each output is one sequential sum over (c, r, s) ascending, then + bias.
  cpu::parallel_for(pool_, g.n, [&](std::int64_t n, int worker) {
    const float* col = columns_of(g, x + n * image_size(g), scratch_, worker);
    float* y_n = y + n * g.k * pq;
    cpu::gemm(g.k, pq, crs, row_major(w, crs), row_major(col, pq), y_n, pq, GemmOutput::overwrite,
              cpu::gemm_buffers(scratch_, worker));
    if (bias != nullptr) {
      for (std::int64_t k = 0; k < g.k; ++k) {
        float* row = y_n + k * pq;
        for (std::int64_t j = 0; j < pq; ++j) row[j] += bias[k];
      }
    }
  });
}

void CpuOps::conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy,
                                    float* dw, KernelMode mode) {
  const std::int64_t crs = cpu::col_rows(g), pq = cpu::col_cols(g), size = g.k * crs;
  const cpu::ChunkPlan plan = cpu::plan_chunks(g.n, size);
  // A chunk adds its images in ascending order, each as a GEMM whose sums run over (p, q).
  cpu::reduce_chunks(pool_, scratch_, mode, plan.chunks, size, dw,
                     [&](std::int64_t chunk, float* partial, int worker) {
                       for (std::int64_t n = plan.begin(chunk); n < plan.end(chunk); ++n) {
                         const float* col = columns_of(g, x + n * image_size(g), scratch_, worker);
                         cpu::gemm(g.k, crs, pq, row_major(dy + n * g.k * pq, pq),
                                   transpose_of(col, pq), partial, crs, GemmOutput::accumulate,
                                   cpu::gemm_buffers(scratch_, worker));
                       }
                     });
}

void CpuOps::conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                                  KernelMode mode) {
  const std::int64_t pq = cpu::col_cols(g);
  const cpu::ChunkPlan plan = cpu::plan_chunks(g.n, g.k);
  cpu::reduce_chunks(pool_, scratch_, mode, plan.chunks, g.k, db,
                     [&](std::int64_t chunk, float* partial, int) {
                       for (std::int64_t n = plan.begin(chunk); n < plan.end(chunk); ++n) {
                         for (std::int64_t k = 0; k < g.k; ++k) {
                           const float* plane = dy + (n * g.k + k) * pq;
                           float sum = partial[k];
                           for (std::int64_t j = 0; j < pq; ++j) sum += plane[j];
                           partial[k] = sum;
                         }
                       }
                     });
}

void CpuOps::conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx,
                                  KernelMode mode) {
  const std::int64_t crs = cpu::col_rows(g), pq = cpu::col_cols(g), chw = image_size(g);
  const bool identity = cpu::im2col_is_identity(g);
  const auto col_floats = static_cast<std::size_t>(crs * pq);

  if (mode != KernelMode::nondeterministic) {
    // One task per image: the GEMM sums over filters k ascending, col2im over taps in a fixed
    // order.
    cpu::parallel_for(pool_, g.n, [&](std::int64_t n, int worker) {
      float* dx_n = dx + n * chw;
      float* dcol =
          identity ? dx_n : scratch_.worker(worker, cpu::WorkerBuffer::columns, col_floats);
      cpu::gemm(crs, pq, g.k, transpose_of(w, crs), row_major(dy + n * g.k * pq, pq), dcol, pq,
                GemmOutput::overwrite, cpu::gemm_buffers(scratch_, worker));
      if (!identity) cpu::col2im(g, dcol, dx_n);
    });
    return;
  }

  // Nondeterministic: the filters are split into up to kSplitKParts groups; the task for (image,
  // group) computes that group's share of dx_n in its own buffer and adds it with atomic adds.
  cpu::parallel_for(pool_, g.n, [&](std::int64_t n, int) { std::fill_n(dx + n * chw, chw, 0.0f); });
  const std::int64_t group =
      std::max<std::int64_t>(1, (g.k + cpu::kSplitKParts - 1) / cpu::kSplitKParts);
  const std::int64_t groups = (g.k + group - 1) / group;
  cpu::parallel_for(pool_, g.n * groups, [&](std::int64_t task, int worker) {
    const std::int64_t n = task / groups, k0 = (task % groups) * group;
    const std::int64_t filters = std::min(group, g.k - k0);
    float* dcol = scratch_.worker(worker, cpu::WorkerBuffer::columns, col_floats);
    cpu::gemm(crs, pq, filters, transpose_of(w, crs).shifted(0, k0),
              row_major(dy + n * g.k * pq, pq).shifted(k0, 0), dcol, pq, GemmOutput::overwrite,
              cpu::gemm_buffers(scratch_, worker));
    const float* share = dcol;
    if (!identity) {
      float* image =
          scratch_.worker(worker, cpu::WorkerBuffer::partial, static_cast<std::size_t>(chw));
      cpu::col2im(g, dcol, image);
      share = image;
    }
    cpu::atomic_add(dx + n * chw, share, chw);
  });
}

}  // namespace ra::backend
