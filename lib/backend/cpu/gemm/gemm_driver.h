#pragma once
// The blocking loops shared by every GEMM kernel variant (internal to gemm*.cpp).
//
// Loop order (BLIS): jc over NC columns -> pc over k blocks (pack a KC x NC block of B, L2) ->
// ic over MC rows (pack an MC x KC block of A, L2) -> jr over NR columns -> ir over MR rows ->
// micro-kernel. The KC x NR micro-panel of B stays in L1 while the ir loop streams MR x KC
// micro-panels of A past it.
//
// Determinism: a micro-kernel keeps one running sum per C element and adds the k-block's
// products to it in ascending p; k blocks are visited in ascending order and a sum that leaves
// registers is stored to C as a float and reloaded exactly. So every C element is the sequential
// sum over p = 0 .. k-1 that the variant computes (c = c + a*b, or c = fma(a, b, c)), whatever
// MC/KC/NC or the split of C between threads: the bits depend on the variant only.
//
// The packing and loop code here is compiled for baseline x86-64 in every translation unit (no
// target attributes reach it), so an instantiation shared between units never carries AVX code.
#include <algorithm>
#include <cstdint>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/simd/transpose.h"
#include "core/integer_math.h"

namespace ra::backend::cpu::gemm_detail {

// Packs A[i0 .. i0+rows, p0 .. p0+depth) as consecutive MR-row panels, each stored p-major
// ([depth][MR]); rows past `rows` are zero so that edge tiles run the same kernel.
template <int MR>
void pack_a(MatrixView a, std::int64_t i0, std::int64_t rows, std::int64_t p0, std::int64_t depth,
            float* dst) {
  for (std::int64_t ir = 0; ir < rows; ir += MR, dst += MR * depth) {
    const std::int64_t valid = std::min<std::int64_t>(MR, rows - ir);
    const MatrixView panel = a.shifted(i0 + ir, p0);
    if (panel.col_stride == 1) {  // rows contiguous: read along p
      transpose_into(&panel(0, 0), panel.row_stride, valid, depth, dst, MR);
      for (std::int64_t i = valid; i < MR; ++i) {
        for (std::int64_t p = 0; p < depth; ++p) dst[p * MR + i] = 0.0f;
      }
    } else if (panel.row_stride == 1 && valid == MR) {  // columns contiguous (a transposed A)
      for (std::int64_t p = 0; p < depth; ++p) {
        const float* src = &panel(0, p);
        for (int i = 0; i < MR; ++i) dst[p * MR + i] = src[i];
      }
    } else {
      for (std::int64_t p = 0; p < depth; ++p) {
        for (int i = 0; i < MR; ++i) dst[p * MR + i] = i < valid ? panel(i, p) : 0.0f;
      }
    }
  }
}

// Packs B[p0 .. p0+depth, j0 .. j0+cols) as consecutive NR-column panels, each [depth][NR]; columns
// past `cols` are zero. With contiguous rows, the whole panels are filled row by row of B: each row
// piece is read in one sweep (the dense layers' B rows are 36 KB apart, so panel by panel every
// 192-byte read would begin a new page, where the hardware prefetchers do not follow, and wait for
// memory).
template <int NR>
void pack_b(MatrixView b, std::int64_t p0, std::int64_t depth, std::int64_t j0, std::int64_t cols,
            float* dst) {
  const std::int64_t whole = cols / NR * NR;
  if (b.col_stride == 1 && whole > 0) {
    for (std::int64_t p = 0; p < depth; ++p) {
      const float* src = &b(p0 + p, j0);
      for (std::int64_t jr = 0; jr < whole; jr += NR) {
        float* out = dst + jr * depth + p * NR;
        for (int j = 0; j < NR; ++j) out[j] = src[jr + j];
      }
    }
    if (whole == cols) return;
    dst += whole * depth;
    j0 += whole;
    cols -= whole;
  }
  for (std::int64_t jr = 0; jr < cols; jr += NR, dst += NR * depth) {
    const std::int64_t valid = std::min<std::int64_t>(NR, cols - jr);
    const MatrixView panel = b.shifted(p0, j0 + jr);
    if (panel.col_stride == 1 && valid == NR) {  // the common case: one contiguous row piece
      for (std::int64_t p = 0; p < depth; ++p) {
        const float* src = &panel(p, 0);
        for (int j = 0; j < NR; ++j) dst[p * NR + j] = src[j];
      }
    } else if (panel.row_stride == 1) {  // columns contiguous (a transposed operand): read along p
      transpose_into(&panel(0, 0), panel.col_stride, valid, depth, dst, NR);
      for (std::int64_t j = valid; j < NR; ++j) {
        for (std::int64_t p = 0; p < depth; ++p) dst[p * NR + j] = 0.0f;
      }
    } else {
      for (std::int64_t p = 0; p < depth; ++p) {
        for (int j = 0; j < NR; ++j) dst[p * NR + j] = j < valid ? panel(p, j) : 0.0f;
      }
    }
  }
}

// Kernel: a struct with constexpr MR, NR, KC, MC, NC and
//   static void tile(depth, packed_a, packed_b, c, ldc, first)
// computing one full MR x NR tile: c = (first ? 0 : c) + sum over p ascending.
template <class Kernel>
void edge_tile(std::int64_t depth, const float* a, const float* b, float* c, std::int64_t ldc,
               bool first, std::int64_t rows, std::int64_t cols) {
  // A partial tile at the right or bottom edge: run the full kernel on a copy, store the valid
  // part (the zero padding of the packed panels only feeds the discarded rows and columns).
  alignas(64) float tile[Kernel::MR * Kernel::NR] = {};
  if (!first) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) tile[i * Kernel::NR + j] = c[i * ldc + j];
    }
  }
  Kernel::tile(depth, a, b, tile, Kernel::NR, first);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) c[i * ldc + j] = tile[i * Kernel::NR + j];
  }
}

template <class Kernel>
void blocked_gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                  float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  constexpr int MR = Kernel::MR, NR = Kernel::NR;
  static_assert(Kernel::MC % MR == 0 && Kernel::NC % NR == 0, "blocks must hold whole tiles");
  static_assert(std::size_t(Kernel::MC) * Kernel::KC <= kGemmPackAFloats, "pack_a too small");
  static_assert(std::size_t(Kernel::KC) * Kernel::NC <= kGemmPackBFloats, "pack_b too small");
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum
    if (output == GemmOutput::overwrite) {
      for (std::int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    }
    return;
  }
  // Equal k blocks of at most KC (k = 288 -> 2 x 144, not 256 + 32): the last block is not a
  // sliver whose C loads and stores cost as much as its arithmetic. Blocking never changes bits.
  const std::int64_t k_blocks = ceil_div(k, Kernel::KC);
  const std::int64_t kc_step = ceil_div(k, k_blocks);
  for (std::int64_t jc = 0; jc < n; jc += Kernel::NC) {
    const std::int64_t nc = std::min<std::int64_t>(Kernel::NC, n - jc);
    for (std::int64_t pc = 0; pc < k; pc += kc_step) {
      const std::int64_t kc = std::min<std::int64_t>(kc_step, k - pc);
      const bool first = pc == 0 && output == GemmOutput::overwrite;
      pack_b<NR>(b, pc, kc, jc, nc, buffers.pack_b);
      for (std::int64_t ic = 0; ic < m; ic += Kernel::MC) {
        const std::int64_t mc = std::min<std::int64_t>(Kernel::MC, m - ic);
        pack_a<MR>(a, ic, mc, pc, kc, buffers.pack_a);
        for (std::int64_t jr = 0; jr < nc; jr += NR) {
          const float* bp = buffers.pack_b + jr * kc;
          const std::int64_t cols = std::min<std::int64_t>(NR, nc - jr);
          for (std::int64_t ir = 0; ir < mc; ir += MR) {
            const float* ap = buffers.pack_a + ir * kc;
            const std::int64_t rows = std::min<std::int64_t>(MR, mc - ir);
            float* ct = c + (ic + ir) * ldc + jc + jr;
            if (rows == MR && cols == NR) {
              Kernel::tile(kc, ap, bp, ct, ldc, first);
            } else {
              edge_tile<Kernel>(kc, ap, bp, ct, ldc, first, rows, cols);
            }
          }
        }
      }
    }
  }
}

}  // namespace ra::backend::cpu::gemm_detail
