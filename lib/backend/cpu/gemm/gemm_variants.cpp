// The three GEMM variants behind gemm.h's dispatch. The FMA variants' micro-kernel is the pixel
// tile of the direct convolutions (simd/register_tile_templates.h), instantiated for each
// instruction set in simd/register_tiles_{avx2,avx512}.cpp: a GEMM tile is a pixel tile whose
// "source" is the packed B panel (NR lanes per depth step) and whose broadcast panel is packed A
// (MR rows per step). The chains:
//     portable:          c = c0; for p ascending: c = c + a(i,p) * b(p,j)   (rounded product)
//     avx2-fma, avx512:  c = c0; for p ascending: c = fma(a(i,p), b(p,j), c)
// The two FMA variants give identical bits; the portable one gives the naive loop's bits on any
// machine.
//
// This unit is baseline code: the blocking loops and packing (gemm_driver.h) never carry a target
// attribute; only the tiles do, and a variant is reached only after gemm.cpp has checked the CPU.
#include "backend/cpu/gemm/gemm_driver.h"
#include "backend/cpu/gemm/gemm_kernels.h"
#include "backend/cpu/simd/register_tiles.h"

namespace ra::backend::cpu::gemm_detail {
namespace {

// 4 x 8 accumulators = 8 SSE registers. A KC x NR panel of B is 8 KiB (L1); an MC x KC block of A
// 128 KiB. Its own loop, not the portable pixel tile: that one reads its broadcasts with an atomic
// load (simd/register_tiles_portable.cpp says why), which the compiler may not merge or widen, so
// every broadcast stays a scalar load of its own; the plain loads here carry no such constraint.
// The i and j loops have constant bounds, so the compiler unrolls them and vectorises along j; the
// chain is the pixel tile's.
struct PortableKernel {
  static constexpr int MR = kPortableMR, NR = kPortableNR;
  static constexpr int KC = 256, MC = 128, NC = 1024;
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

// A GEMM kernel (gemm_driver.h's blocked_gemm) whose MR x NR tile is the variant's pixel tile over
// `depth` steps of packed A and B, with the given cache blocking.
template <Isa kIsa, int kMR, int kNR, int kKC, int kMC, int kNC>
struct PixelTileKernel {
  static constexpr int MR = kMR, NR = kNR;
  static constexpr int KC = kKC, MC = kMC, NC = kNC;
  static void tile(std::int64_t depth, const float* a, const float* b, float* c, std::int64_t ldc,
                   bool first) {
    // Looked up once per process (the table is built on first use, thread-safe).
    static const direct_detail::TileFunction tile = direct_detail::pixel_tile_function(
        kIsa, /*strided_depth=*/true, MR, direct_detail::pixel_tile_vectors(kIsa));
    direct_detail::TileArgs t;
    t.depth = depth;
    t.base = b;
    t.depth_stride = NR;
    t.panel = a;
    t.panel_stride = MR;
    t.out = c;
    t.out_stride = ldc;
    t.first = first;
    tile(t);
  }
};

// 6 x 16 tile = 6 rows x 2 ymm = 12 accumulators; with 2 B vectors and 1 broadcast, 15 of the 16
// ymm registers. Per p: 2 loads + 6 broadcasts feed 12 FMAs. KC x NR of B = 16 KiB (L1).
using Avx2Kernel = PixelTileKernel<Isa::avx2_fma, kAvx2MR, kAvx2NR, 256, 126, 1024>;

// 8 x 48 tile = 8 rows x 3 zmm = 24 accumulators; with 3 B vectors and 1 broadcast, 28 of the 32
// zmm registers. Per p: 3 loads + 8 broadcasts feed 24 FMAs (two FMA ports stay busy).
// m = 64 filters and n = 576 / 288 pixels of the MNIST convs are whole tiles (64 = 8 * 8,
// 576 = 12 * 48). A KC x NR panel of B: 192 * 48 * 4 B = 36 KiB of a 48 KiB L1 (blocked_gemm
// splits k evenly: k = 288 -> 2 x 144, 27 KiB); an MC x KC block of A: 96 KiB (L2).
using Avx512Kernel = PixelTileKernel<Isa::avx512_fma, kAvx512MR, kAvx512NR, 192, 128, 1008>;

}  // namespace

void gemm_portable(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  blocked_gemm<PortableKernel>(m, n, k, a, b, c, ldc, output, buffers);
}

void gemm_avx2_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                   float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  blocked_gemm<Avx2Kernel>(m, n, k, a, b, c, ldc, output, buffers);
}

void gemm_avx512_fma(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                     float* c, std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  blocked_gemm<Avx512Kernel>(m, n, k, a, b, c, ldc, output, buffers);
}

}  // namespace ra::backend::cpu::gemm_detail
