// Choice of the GEMM variant and dispatch to it (the variants: gemm_variants.cpp, whose tiles are
// the direct convolutions' pixel tiles).
#include "backend/cpu/gemm/gemm.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "backend/cpu/gemm/gemm_kernels.h"
#include "core/error.h"

namespace ra::backend::cpu {
namespace {

constexpr const char* kEnvironmentVariable = "REPRO_AUDIT_GEMM";

GemmKernel best_supported_kernel() {
  if (gemm_kernel_supported(GemmKernel::avx512_fma)) return GemmKernel::avx512_fma;
  if (gemm_kernel_supported(GemmKernel::avx2_fma)) return GemmKernel::avx2_fma;
  return GemmKernel::portable;
}

GemmKernel choose_kernel() {
  const char* forced = std::getenv(kEnvironmentVariable);
  if (forced == nullptr || *forced == '\0') return best_supported_kernel();
  const std::string_view name(forced);
  GemmKernel kernel;
  if (name == "portable") {
    kernel = GemmKernel::portable;
  } else if (name == "avx2") {
    kernel = GemmKernel::avx2_fma;
  } else if (name == "avx512") {
    kernel = GemmKernel::avx512_fma;
  } else {
    throw InputError(std::string("environment variable ") + kEnvironmentVariable + "=" + forced +
                     ": expected portable, avx2 or avx512");
  }
  if (!gemm_kernel_supported(kernel)) {
    throw RuntimeFailure(std::string("environment variable ") + kEnvironmentVariable + "=" +
                         forced + ": this CPU cannot run the " + gemm_kernel_name(kernel) +
                         " GEMM kernel");
  }
  return kernel;
}

}  // namespace

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::portable:
      return "portable";
    case GemmKernel::avx2_fma:
      return "avx2-fma";
    case GemmKernel::avx512_fma:
      return "avx512-fma";
  }
  return "unknown";
}

bool gemm_kernel_supported(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::portable:
      return true;
#if defined(__x86_64__) || defined(__i386__)
    // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
    case GemmKernel::avx2_fma:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmKernel::avx512_fma:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#else
    case GemmKernel::avx2_fma:
    case GemmKernel::avx512_fma:
      return false;
#endif
  }
  return false;
}

GemmKernel gemm_kernel() {
  // A function-local static: decided once, thread-safe; a throw leaves it undecided (retried).
  static const GemmKernel chosen = choose_kernel();
  return chosen;
}

const char* gemm_kernel_name() {
  return gemm_kernel_name(gemm_kernel());
}

GemmTile gemm_tile(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::portable:
      return {gemm_detail::kPortableMR, gemm_detail::kPortableNR};
    case GemmKernel::avx2_fma:
      return {gemm_detail::kAvx2MR, gemm_detail::kAvx2NR};
    case GemmKernel::avx512_fma:
      return {gemm_detail::kAvx512MR, gemm_detail::kAvx512NR};
  }
  return {1, 1};
}

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers) {
  gemm(m, n, k, a, b, c, ldc, output, buffers, gemm_kernel());
}

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b, float* c,
          std::int64_t ldc, GemmOutput output, GemmBuffers buffers, GemmKernel kernel) {
  // An unsupported variant would die of SIGILL; the check costs a load per call.
  if (!gemm_kernel_supported(kernel)) {
    throw RuntimeFailure(std::string("this CPU cannot run the ") + gemm_kernel_name(kernel) +
                         " GEMM kernel");
  }
  switch (kernel) {
    case GemmKernel::portable:
      return gemm_detail::gemm_portable(m, n, k, a, b, c, ldc, output, buffers);
    case GemmKernel::avx2_fma:
      return gemm_detail::gemm_avx2_fma(m, n, k, a, b, c, ldc, output, buffers);
    case GemmKernel::avx512_fma:
      return gemm_detail::gemm_avx512_fma(m, n, k, a, b, c, ldc, output, buffers);
  }
}

}  // namespace ra::backend::cpu
