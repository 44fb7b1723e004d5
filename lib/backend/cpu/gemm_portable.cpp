// The portable GEMM variant: plain C++ that the compiler vectorises for baseline x86-64 (SSE2).
// Each product is rounded before it is added (-ffp-contract=off), so this variant gives the same
// bits as the naive loop  c = c0; for p ascending: c = c + a(i,p) * b(p,j)  on any machine.
#include "backend/cpu/gemm_driver.h"
#include "backend/cpu/gemm_kernels.h"

namespace ra::backend::cpu::gemm_detail {
namespace {

// 4 x 8 accumulators = 8 SSE registers, leaving room for the B row and the broadcast A value in
// the 16 of baseline x86-64. A KC x NR panel of B is 8 KiB (L1); an MC x KC block of A 128 KiB.
struct PortableKernel {
  static constexpr int MR = kPortableMR, NR = kPortableNR;
  static constexpr int KC = 256, MC = 128, NC = 1024;

  // The i and j loops have constant bounds, so the compiler unrolls them and vectorises along j.
  static void tile(std::int64_t depth, const float* __restrict a, const float* __restrict b,
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
};

}  // namespace

void gemm_portable(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  blocked_gemm<PortableKernel>(m, n, k, a, b, c, ldc, output, buffers);
}

}  // namespace ra::backend::cpu::gemm_detail
