// Dispatch of gemm() to the variant of an instruction set (the variants: gemm_variants.cpp, whose
// tiles are the direct convolutions' pixel tiles).
#include "backend/cpu/gemm/gemm.h"

#include <string>

#include "backend/cpu/gemm/gemm_kernels.h"
#include "core/error.h"

namespace ra::backend::cpu {
GemmTile gemm_tile(Isa isa) {
  switch (isa) {
    case Isa::portable:
      return {gemm_detail::kPortableMR, gemm_detail::kPortableNR};
    case Isa::avx2_fma:
      return {gemm_detail::kAvx2MR, gemm_detail::kAvx2NR};
    case Isa::avx512_fma:
      return {gemm_detail::kAvx512MR, gemm_detail::kAvx512NR};
  }
  return {1, 1};
}

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  gemm(m, n, k, a, b, c, ldc, output, buffers, active_isa());
}

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers, Isa isa) {
  // An unsupported variant would die of SIGILL; the check costs a load per call.
  if (!isa_supported(isa)) {
    throw RuntimeFailure(std::string("this CPU cannot run the ") + isa_name(isa) +
                         " instruction set");
  }
  switch (isa) {
    case Isa::portable:
      return gemm_detail::gemm_portable(m, n, k, a, b, c, ldc, output, buffers);
    case Isa::avx2_fma:
      return gemm_detail::gemm_avx2_fma(m, n, k, a, b, c, ldc, output, buffers);
    case Isa::avx512_fma:
      return gemm_detail::gemm_avx512_fma(m, n, k, a, b, c, ldc, output, buffers);
  }
}

}  // namespace ra::backend::cpu
