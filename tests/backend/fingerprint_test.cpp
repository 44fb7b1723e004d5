// The CPU backend's part of the environment fingerprint: the kernel variant it runs, under the
// key and with the name the trace has always recorded.
#include <catch2/catch.hpp>

#include <string>

#include "backend/cpu/cpu_fingerprint.h"
#include "backend/cpu/simd/isa.h"

TEST_CASE("the CPU fingerprint names the kernel variant this process runs", "[fingerprint]") {
  const nlohmann::json fp = ra::backend::cpu::cpu_fingerprint();
  REQUIRE(fp.is_object());
  REQUIRE(fp.size() == 1);
  REQUIRE(fp.contains("cpu_gemm_kernel"));
  const std::string name = fp["cpu_gemm_kernel"];
  CHECK(name == ra::backend::cpu::active_isa_name());
  CHECK((name == "portable" || name == "avx2-fma" || name == "avx512-fma"));
}
