// dense layers as GEMMs on the PyTorch layout w[OUT, IN]:
//   forward          y[N, OUT]   = x[N, IN] w^T[IN, OUT]     (+ b[o] afterwards)
//   backward data    dx[N, IN]   = dy[N, OUT] w[OUT, IN]     (sums over output units)
//   backward weight  dw[OUT, IN] = dy^T[OUT, N] x[N, IN]     (sums over the batch)
//   backward bias    db[OUT]     = sum over the batch of dy
// Deterministic GEMMs give each output element one task and one sequential sum (parallel_gemm).
// For the weight gradient that sum runs over the whole batch in order: per-chunk partials, as for
// conv filters, would cost OUT * IN floats each (4.5 MiB for the MNIST 9216 -> 128 layer) while
// the output alone already offers plenty of independent tiles to the threads.
#include <algorithm>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm/parallel_gemm.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "core/integer_math.h"

namespace ra::backend::cpu {

using cpu::GemmOutput;
using cpu::row_major;
using cpu::transpose_of;

void CpuOps::dense_forward(const DenseGeometry& g, const float* x, const float* w,
                           const float* bias, Activation act, float* y) {
  cpu::parallel_gemm(pool_, scratch_, g.n, g.out, g.in, row_major(x, g.in), transpose_of(w, g.in),
                     y, g.out, GemmOutput::overwrite);
  if (bias == nullptr && act == Activation::none) return;
  const std::int64_t rows_per_task =
      std::max<std::int64_t>(1, cpu::kElementBlock / std::max(1, g.out));
  cpu::parallel_for(pool_, ceil_div(g.n, rows_per_task), [&](std::int64_t task, int) {
    const std::int64_t end = std::min<std::int64_t>(g.n, (task + 1) * rows_per_task);
    for (std::int64_t i = task * rows_per_task; i < end; ++i) {
      float* row = y + i * g.out;
      if (bias != nullptr) {
        for (std::int64_t o = 0; o < g.out; ++o) row[o] += bias[o];
      }
      cpu::activate(act, row, row, g.out);
    }
  });
}

void CpuOps::dense_backward_data(const DenseGeometry& g, const float* dy, const float* w, float* dx,
                                 KernelMode mode) {
  if (mode != KernelMode::nondeterministic) {
    cpu::parallel_gemm(pool_, scratch_, g.n, g.in, g.out, row_major(dy, g.out), row_major(w, g.in),
                       dx, g.in, GemmOutput::overwrite);
  } else {
    cpu::parallel_gemm_split_k_atomic(pool_, scratch_, g.n, g.in, g.out, row_major(dy, g.out),
                                      row_major(w, g.in), dx, g.in);
  }
}

void CpuOps::dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy,
                                   float* dw, KernelMode mode) {
  if (mode != KernelMode::nondeterministic) {
    cpu::parallel_gemm(pool_, scratch_, g.out, g.in, g.n, transpose_of(dy, g.out),
                       row_major(x, g.in), dw, g.in, GemmOutput::overwrite);
  } else {
    cpu::parallel_gemm_split_k_atomic(pool_, scratch_, g.out, g.in, g.n, transpose_of(dy, g.out),
                                      row_major(x, g.in), dw, g.in);
  }
}

void CpuOps::dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                                 KernelMode mode) {
  const cpu::ChunkPlan plan = cpu::plan_chunks(g.n, g.out);
  cpu::reduce_chunks(pool_, scratch_, mode, plan.chunks, g.out, db,
                     [&](std::int64_t chunk, float* partial, int) {
                       for (std::int64_t i = plan.begin(chunk); i < plan.end(chunk); ++i) {
                         const float* row = dy + i * g.out;
                         for (std::int64_t o = 0; o < g.out; ++o) partial[o] += row[o];
                       }
                     });
}

}  // namespace ra::backend::cpu
