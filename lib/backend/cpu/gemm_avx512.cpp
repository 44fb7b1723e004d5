// The AVX-512F+FMA GEMM variant. Every C element is the sequential chain
//     c = c0; for p ascending: c = fma(a(i,p), b(p,j), c)
// (one rounding per step), the same chain as the AVX2 variant, so the two give identical bits;
// they differ from the portable variant's (a rounded product, then a rounded add).
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

// 8 x 48 tile = 8 rows x 3 zmm = 24 accumulators; with 3 B vectors and 1 broadcast, 28 of the 32
// zmm registers. Per p: 3 loads + 8 broadcasts feed 24 FMAs (two FMA ports stay busy).
// m = 64 filters and n = 576 / 288 pixels of the MNIST convs are whole tiles (64 = 8 * 8,
// 576 = 12 * 48). A KC x NR panel of B: 192 * 48 * 4 B = 36 KiB of a 48 KiB L1 (blocked_gemm
// splits k evenly: k = 288 -> 2 x 144, 27 KiB); an MC x KC block of A: 96 KiB (L2).
struct Avx512Kernel {
  static constexpr int MR = kAvx512MR, NR = kAvx512NR;
  static constexpr int KC = 192, MC = 128, NC = 1008;

  __attribute__((target("avx512f,fma"))) static void tile(std::int64_t depth,
                                                          const float* __restrict a,
                                                          const float* __restrict b,
                                                          float* __restrict c, std::int64_t ldc,
                                                          bool first) {
    __m512 acc[MR][3];
    for (int i = 0; i < MR; ++i) {
      for (int v = 0; v < 3; ++v) {
        acc[i][v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16 * v);
      }
    }
    for (std::int64_t p = 0; p < depth; ++p) {
      const __m512 b0 = _mm512_loadu_ps(b + p * NR);
      const __m512 b1 = _mm512_loadu_ps(b + p * NR + 16);
      const __m512 b2 = _mm512_loadu_ps(b + p * NR + 32);
      for (int i = 0; i < MR; ++i) {
        const __m512 ai = _mm512_set1_ps(a[p * MR + i]);
        acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        acc[i][2] = _mm512_fmadd_ps(ai, b2, acc[i][2]);
      }
    }
    for (int i = 0; i < MR; ++i) {
      for (int v = 0; v < 3; ++v) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
    }
  }
};

}  // namespace

void gemm_avx512_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                     float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  blocked_gemm<Avx512Kernel>(m, n, k, a, b, c, ldc, output, buffers);
}

#else

void gemm_avx512_fma(std::int64_t, std::int64_t, std::int64_t, MatrixView, MatrixView, float*,
                     std::int64_t, GemmOutput, GemmBuffers) {
  throw RuntimeFailure("the avx512-fma GEMM kernel exists only in x86 builds");
}

#endif

}  // namespace ra::backend::cpu::gemm_detail
