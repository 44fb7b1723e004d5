#pragma once
// The GEMM variants behind gemm.h's dispatch, one translation unit each (internal to
// lib/backend/cpu). Each has gemm()'s contract; a variant may be called only when
// isa_supported() says the CPU runs it.
#include <cstdint>

#include "backend/cpu/gemm/gemm.h"

namespace ra::backend::cpu::gemm_detail {

void gemm_portable(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers);
void gemm_avx2_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers);
void gemm_avx512_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                     float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers);

// Register tile of each variant (the parallel GEMM cuts C into whole tiles); the pixel tiles of
// simd/register_tiles.h that compute them have these shapes.
inline constexpr int kPortableMR = 4, kPortableNR = 8;
inline constexpr int kAvx2MR = 6, kAvx2NR = 16;
inline constexpr int kAvx512MR = 8, kAvx512NR = 48;

}  // namespace ra::backend::cpu::gemm_detail
