// Catch2's main, after one check of the run's setting: the engine's tests run under any
// REPRO_AUDIT_ISA this CPU runs (tests/README.md). Where the variable (or its old name
// REPRO_AUDIT_GEMM) names an instruction set the CPU lacks, the CPU backend refuses it in every
// test that reaches it: dozens of failures for one cause, and tests that never reach the backend
// passing as if the setting had been checked. So the executable says it once and exits 77, which
// CTest counts as skipped (tests/CMakeLists.txt). Listing the tests (CTest's discovery at build
// time) goes on as usual.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

namespace {

constexpr int kSkipped = 77;

// The CPU flags the value needs (lib/backend/cpu/simd/isa.cpp's test, which tests of modules
// below the backend cannot link), or "" when it needs none or is not an instruction set.
std::string missing_flags(std::string_view value) {
  std::string missing;
#if defined(__x86_64__) || defined(__i386__)
  if (value == "avx2" || value == "avx512") {
    if (!__builtin_cpu_supports("fma")) missing += " FMA";
  }
  if (value == "avx2" && !__builtin_cpu_supports("avx2")) missing += " AVX2";
  if (value == "avx512" && !__builtin_cpu_supports("avx512f")) missing += " AVX-512F";
#else
  if (value == "avx2" || value == "avx512") missing = " x86-64";
#endif
  return missing;
}

bool listing(int argc, char* argv[]) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]).substr(0, 6) == "--list") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char* argv[]) {
  for (const char* variable : {"REPRO_AUDIT_ISA", "REPRO_AUDIT_GEMM"}) {
    const char* value = std::getenv(variable);
    if (value == nullptr || listing(argc, argv)) continue;
    const std::string missing = missing_flags(value);
    if (!missing.empty()) {
      std::cout << "skipped: " << variable << "=" << value << " names an instruction set this CPU"
                << " cannot run (it lacks" << missing << ")\n";
      return kSkipped;
    }
  }
  return Catch::Session().run(argc, argv);
}
