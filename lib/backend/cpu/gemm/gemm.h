#pragma once
// Single-threaded, cache-blocked SGEMM: C[m,n] (=|+=) A[m,k] B[k,n], C row-major with leading
// dimension ldc, A and B read through strides (so transposes cost nothing but a packing order).
//
// One variant per instruction set (../simd/isa.h: "avx512-fma", "avx2-fma" or "portable"); gemm()
// runs the process's, active_isa(), unless given one.
//
// Determinism: every C element is ONE sequential float chain over k, in ascending order,
//     portable:          c = c0; for p = 0 .. k-1: c = c + A[i,p] * B[p,j]  (product rounded)
//     avx2 / avx512:     c = c0; for p = 0 .. k-1: c = fma(A[i,p], B[p,j], c)
// with c0 = 0 or the old C. Cache blocking only decides when that running sum visits memory,
// never its order, so the bits are a function of the operands and the variant only: identical
// for any blocking, tiling or split of C between threads, and identical between the two FMA
// variants. The portable variant equals the naive triple loop under -ffp-contract=off.
#include <cstddef>
#include <cstdint>

#include "backend/cpu/simd/isa.h"

namespace ra::backend::cpu {

// A read-only strided matrix: element (i, j) is data[i * row_stride + j * col_stride].
struct MatrixView {
  const float* data = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;

  const float& operator()(std::int64_t i, std::int64_t j) const {
    return data[i * row_stride + j * col_stride];
  }
  // The submatrix whose element (0, 0) is this matrix's (i, j).
  MatrixView shifted(std::int64_t i, std::int64_t j) const {
    return {data + i * row_stride + j * col_stride, row_stride, col_stride};
  }
};

// A row-major [rows, cols] matrix.
inline MatrixView row_major(const float* data, std::int64_t cols) {
  return {data, cols, 1};
}
// The transpose of a row-major [rows, cols] matrix (a [cols, rows] view of the same memory).
inline MatrixView transpose_of(const float* data, std::int64_t cols) {
  return {data, 1, cols};
}

// Sizes of the packing panels every variant fits in (each variant picks its own MC/KC/NC within
// them: at most 128 x 256 floats of A, 128 KiB, for L2; 256 x 1024 of B, 1 MiB).
inline constexpr std::size_t kGemmPackAFloats = std::size_t(128) * 256;
inline constexpr std::size_t kGemmPackBFloats = std::size_t(256) * 1024;

// Packing panels, at least kGemmPackAFloats and kGemmPackBFloats floats, 64-byte aligned.
struct GemmBuffers {
  float* pack_a = nullptr;
  float* pack_b = nullptr;
};

enum class GemmOutput { overwrite, accumulate };

// The register tile of a variant: the parallel GEMM cuts C into whole tiles.
struct GemmTile {
  int rows = 0, cols = 0;
};
GemmTile gemm_tile(Isa isa);

// With the process's instruction set (active_isa()), or with an explicit one (it must be
// supported).
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers);
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers, Isa isa);

}  // namespace ra::backend::cpu
