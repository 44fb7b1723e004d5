#include "backend/cpu/simd/isa.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"

namespace ra::backend::cpu {
namespace {

constexpr const char* kIsaVariable = "REPRO_AUDIT_ISA";
// The variable's name before the choice covered pooling too; still honoured, same values.
constexpr const char* kDeprecatedGemmVariable = "REPRO_AUDIT_GEMM";

Isa best_supported_isa() {
  if (isa_supported(Isa::avx512_fma)) return Isa::avx512_fma;
  if (isa_supported(Isa::avx2_fma)) return Isa::avx2_fma;
  return Isa::portable;
}

bool is_set(const char* value) {
  return value != nullptr && *value != '\0';
}

Isa forced_isa(const char* variable, const char* value) {
  const std::string_view name(value);
  Isa isa;
  if (name == "portable") {
    isa = Isa::portable;
  } else if (name == "avx2") {
    isa = Isa::avx2_fma;
  } else if (name == "avx512") {
    isa = Isa::avx512_fma;
  } else {
    throw InputError(std::string("environment variable ") + variable + "=" + value +
                     ": expected portable, avx2 or avx512");
  }
  if (!isa_supported(isa)) {
    throw RuntimeFailure(std::string("environment variable ") + variable + "=" + value +
                         ": this CPU cannot run the " + isa_name(isa) + " instruction set");
  }
  return isa;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable:
      return "portable";
    case Isa::avx2_fma:
      return "avx2-fma";
    case Isa::avx512_fma:
      return "avx512-fma";
  }
  return "unknown";
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::portable:
      return true;
#if defined(__x86_64__) || defined(__i386__)
    // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
    case Isa::avx2_fma:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512_fma:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#else
    case Isa::avx2_fma:
    case Isa::avx512_fma:
      return false;
#endif
  }
  return false;
}

Isa choose_isa(const char* isa_variable, const char* gemm_variable) {
  if (is_set(isa_variable) && is_set(gemm_variable) &&
      std::string_view(isa_variable) != std::string_view(gemm_variable)) {
    throw InputError(std::string("environment variables ") + kIsaVariable + "=" + isa_variable +
                     " and " + kDeprecatedGemmVariable + "=" + gemm_variable +
                     " disagree: set only " + kIsaVariable);
  }
  if (is_set(isa_variable)) return forced_isa(kIsaVariable, isa_variable);
  if (is_set(gemm_variable)) return forced_isa(kDeprecatedGemmVariable, gemm_variable);
  return best_supported_isa();
}

Isa active_isa() {
  // A function-local static: decided once, thread-safe; a throw leaves it undecided (retried).
  static const Isa chosen =
      choose_isa(std::getenv(kIsaVariable), std::getenv(kDeprecatedGemmVariable));
  return chosen;
}

const char* active_isa_name() {
  return isa_name(active_isa());
}

}  // namespace ra::backend::cpu
