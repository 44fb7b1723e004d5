#include "backend/cpu/gemm.h"

#include <algorithm>

namespace ra::backend::cpu {
namespace {

constexpr int MR = kGemmMR;
constexpr int NR = kGemmNR;

// Packs A[i0 .. i0+rows, p0 .. p0+depth) as consecutive MR-row panels, each stored p-major
// ([depth][MR]); rows past `rows` are zero so that edge tiles run the same kernel.
void pack_a(MatrixView a, std::int64_t i0, std::int64_t rows, std::int64_t p0, std::int64_t depth,
            float* dst) {
  for (std::int64_t ir = 0; ir < rows; ir += MR, dst += MR * depth) {
    const std::int64_t valid = std::min<std::int64_t>(MR, rows - ir);
    const MatrixView panel = a.shifted(i0 + ir, p0);
    if (panel.col_stride == 1) {  // rows contiguous: read along p
      for (int i = 0; i < MR; ++i) {
        if (i < valid) {
          const float* src = &panel(i, 0);
          for (std::int64_t p = 0; p < depth; ++p) dst[p * MR + i] = src[p];
        } else {
          for (std::int64_t p = 0; p < depth; ++p) dst[p * MR + i] = 0.0f;
        }
      }
    } else {
      for (std::int64_t p = 0; p < depth; ++p) {
        for (int i = 0; i < MR; ++i) dst[p * MR + i] = i < valid ? panel(i, p) : 0.0f;
      }
    }
  }
}

// Packs B[p0 .. p0+depth, j0 .. j0+cols) as consecutive NR-column panels, each [depth][NR];
// columns past `cols` are zero.
void pack_b(MatrixView b, std::int64_t p0, std::int64_t depth, std::int64_t j0, std::int64_t cols,
            float* dst) {
  for (std::int64_t jr = 0; jr < cols; jr += NR, dst += NR * depth) {
    const std::int64_t valid = std::min<std::int64_t>(NR, cols - jr);
    const MatrixView panel = b.shifted(p0, j0 + jr);
    if (panel.col_stride == 1 && valid == NR) {  // the common case: one contiguous row piece
      for (std::int64_t p = 0; p < depth; ++p) {
        const float* src = &panel(p, 0);
        for (int j = 0; j < NR; ++j) dst[p * NR + j] = src[j];
      }
    } else if (panel.row_stride == 1) {  // columns contiguous (a transposed operand): read along p
      for (int j = 0; j < NR; ++j) {
        if (j < valid) {
          const float* src = &panel(0, j);
          for (std::int64_t p = 0; p < depth; ++p) dst[p * NR + j] = src[p];
        } else {
          for (std::int64_t p = 0; p < depth; ++p) dst[p * NR + j] = 0.0f;
        }
      }
    } else {
      for (std::int64_t p = 0; p < depth; ++p) {
        for (int j = 0; j < NR; ++j) dst[p * NR + j] = j < valid ? panel(p, j) : 0.0f;
      }
    }
  }
}

// c[MR x NR tile, leading dimension ldc] = (first ? 0 : c) + sum over p of a[p][i] * b[p][j],
// p ascending. The accumulators live in registers; the i and j loops have constant bounds, so the
// compiler unrolls them and vectorises along j.
void micro_kernel(std::int64_t depth, const float* __restrict a, const float* __restrict b,
                  float* __restrict c, std::int64_t ldc, bool first) {
  float acc[MR][NR];
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) acc[i][j] = first ? 0.0f : c[i * ldc + j];
  }
  for (std::int64_t p = 0; p < depth; ++p) {
    const float* ap = a + p * MR;
    const float* bp = b + p * NR;
    for (int i = 0; i < MR; ++i) {
      const float ai = ap[i];
      for (int j = 0; j < NR; ++j) acc[i][j] += ai * bp[j];
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = acc[i][j];
  }
}

// A partial tile at the right or bottom edge: run the full kernel on a copy, store the valid part.
void edge_kernel(std::int64_t depth, const float* a, const float* b, float* c, std::int64_t ldc,
                 bool first, std::int64_t rows, std::int64_t cols) {
  alignas(64) float tile[MR * NR] = {};
  if (!first) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) tile[i * NR + j] = c[i * ldc + j];
    }
  }
  micro_kernel(depth, a, b, tile, NR, first);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) c[i * ldc + j] = tile[i * NR + j];
  }
}

}  // namespace

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum
    if (output == GemmOutput::overwrite) {
      for (std::int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    }
    return;
  }
  for (std::int64_t jc = 0; jc < n; jc += kGemmNC) {
    const std::int64_t nc = std::min<std::int64_t>(kGemmNC, n - jc);
    // k blocks in ascending order: each C element's running sum continues where it stopped.
    for (std::int64_t pc = 0; pc < k; pc += kGemmKC) {
      const std::int64_t kc = std::min<std::int64_t>(kGemmKC, k - pc);
      const bool first = pc == 0 && output == GemmOutput::overwrite;
      pack_b(b, pc, kc, jc, nc, buffers.pack_b);
      for (std::int64_t ic = 0; ic < m; ic += kGemmMC) {
        const std::int64_t mc = std::min<std::int64_t>(kGemmMC, m - ic);
        pack_a(a, ic, mc, pc, kc, buffers.pack_a);
        for (std::int64_t jr = 0; jr < nc; jr += NR) {
          const float* bp = buffers.pack_b + jr * kc;
          const std::int64_t cols = std::min<std::int64_t>(NR, nc - jr);
          for (std::int64_t ir = 0; ir < mc; ir += MR) {
            const float* ap = buffers.pack_a + ir * kc;
            const std::int64_t rows = std::min<std::int64_t>(MR, mc - ir);
            float* ct = c + (ic + ir) * ldc + jc + jr;
            if (rows == MR && cols == NR) {
              micro_kernel(kc, ap, bp, ct, ldc, first);
            } else {
              edge_kernel(kc, ap, bp, ct, ldc, first, rows, cols);
            }
          }
        }
      }
    }
  }
}

}  // namespace ra::backend::cpu
