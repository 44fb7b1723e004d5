#pragma once
// The GEMM variants behind gemm.h's dispatch, one translation unit each (internal to
// lib/backend/cpu). Each has gemm()'s contract; a variant may be called only when
// isa_supported() says the CPU runs it.
#include <cstdint>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/simd/register_tiles.h"

namespace ra::backend::cpu::gemm_detail {

void gemm_portable(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers);
void gemm_avx2_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers);
void gemm_avx512_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                     float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers);

// Register tile of each variant (the parallel GEMM cuts C into whole tiles): the pixel tile of
// its instruction set (simd/register_tiles.h), which computes it.
inline constexpr int kPortableMR = direct_detail::kPortablePixelTile.rows;
inline constexpr int kPortableNR = direct_detail::kPortablePixelTile.lanes;
inline constexpr int kAvx2MR = direct_detail::kAvx2PixelTile.rows;
inline constexpr int kAvx2NR = direct_detail::kAvx2PixelTile.lanes;
inline constexpr int kAvx512MR = direct_detail::kAvx512PixelTile.rows;
inline constexpr int kAvx512NR = direct_detail::kAvx512PixelTile.lanes;

}  // namespace ra::backend::cpu::gemm_detail
