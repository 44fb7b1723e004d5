#pragma once
// Single-threaded, cache-blocked SGEMM: C[m,n] (=|+=) A[m,k] B[k,n], C row-major with leading
// dimension ldc, A and B read through strides (so transposes cost nothing but a packing order).
//
// Determinism: the kernel is written in outer-product form (C[i, j..] += A[i,p] * B[p, j..] with
// the contiguous output index innermost), so every C element is ONE sequential float sum
//     c = c0; for p = 0, 1, ..., k-1: c = c + A[i,p] * B[p,j]     (c0 = 0 or the old C)
// with each product rounded before the add (the build uses -ffp-contract=off, no FMA). Cache
// blocking only decides when that running sum visits memory, never its order, so the result is
// bitwise identical to the naive triple loop for any blocking, tiling or split of C between
// threads. The inner loops are plain C++ that the compiler vectorises without reassociation.
#include <cstddef>
#include <cstdint>

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

// Register tile (MR x NR accumulators: 4 x 8 floats = 8 SSE registers, leaving room for the B
// row and the broadcast A value in the 16 of baseline x86-64) and cache blocks: a KC x NR panel
// of B (8 KiB) stays in L1 while MR x KC panels of A stream from an MC x KC block (128 KiB, L2).
inline constexpr int kGemmMR = 4;
inline constexpr int kGemmNR = 8;
inline constexpr int kGemmKC = 256;
inline constexpr int kGemmMC = 128;   // multiple of kGemmMR
inline constexpr int kGemmNC = 1024;  // multiple of kGemmNR
inline constexpr std::size_t kGemmPackAFloats = std::size_t(kGemmMC) * kGemmKC;
inline constexpr std::size_t kGemmPackBFloats = std::size_t(kGemmKC) * kGemmNC;

// Packing panels, at least kGemmPackAFloats and kGemmPackBFloats floats, 64-byte aligned.
struct GemmBuffers {
  float* pack_a = nullptr;
  float* pack_b = nullptr;
};

enum class GemmOutput { overwrite, accumulate };

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers);

}  // namespace ra::backend::cpu
