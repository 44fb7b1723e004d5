// The AVX2+FMA GEMM variant. Every C element is the sequential chain
//     c = c0; for p ascending: c = fma(a(i,p), b(p,j), c)
// (one rounding per step), so its bits differ from the portable variant's but are the same on
// every CPU that runs it, for any blocking and thread count.
//
// Only the micro-kernel carries the target attribute: the blocking loops and packing stay
// baseline code, and the function is reached only after gemm.cpp has checked the CPU.
#include "backend/cpu/gemm_driver.h"
#include "backend/cpu/gemm_kernels.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RA_GEMM_HAVE_X86 1
#endif

namespace ra::backend::cpu::gemm_detail {

#ifdef RA_GEMM_HAVE_X86
namespace {

// 6 x 16 tile = 6 rows x 2 ymm = 12 accumulators; with 2 B vectors and 1 broadcast that is 15 of
// the 16 ymm registers. Per p: 2 loads + 6 broadcasts feed 12 FMAs. KC x NR of B = 16 KiB (L1).
struct Avx2Kernel {
  static constexpr int MR = kAvx2MR, NR = kAvx2NR;
  static constexpr int KC = 256, MC = 126, NC = 1024;

  __attribute__((target("avx2,fma"))) static void tile(std::int64_t depth,
                                                       const float* __restrict a,
                                                       const float* __restrict b,
                                                       float* __restrict c, std::int64_t ldc,
                                                       bool first) {
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) {
      for (int v = 0; v < 2; ++v) {
        acc[i][v] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + i * ldc + 8 * v);
      }
    }
    for (std::int64_t p = 0; p < depth; ++p) {
      const __m256 b0 = _mm256_loadu_ps(b + p * NR);
      const __m256 b1 = _mm256_loadu_ps(b + p * NR + 8);
      for (int i = 0; i < MR; ++i) {
        const __m256 ai = _mm256_broadcast_ss(a + p * MR + i);
        acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
      }
    }
    for (int i = 0; i < MR; ++i) {
      for (int v = 0; v < 2; ++v) _mm256_storeu_ps(c + i * ldc + 8 * v, acc[i][v]);
    }
  }
};

}  // namespace

void gemm_avx2_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  blocked_gemm<Avx2Kernel>(m, n, k, a, b, c, ldc, output, buffers);
}

#else

void gemm_avx2_fma(std::int64_t, std::int64_t, std::int64_t, MatrixView, MatrixView, float*,
                   std::int64_t, GemmOutput, GemmBuffers) {
  throw RuntimeFailure("the avx2-fma GEMM kernel exists only in x86 builds");
}

#endif

}  // namespace ra::backend::cpu::gemm_detail
