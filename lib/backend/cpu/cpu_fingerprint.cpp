#include "backend/cpu/cpu_fingerprint.h"

#include "backend/cpu/simd/isa.h"

namespace ra::backend::cpu {

nlohmann::json cpu_fingerprint() {
  return {{"cpu_gemm_kernel", cpu::active_isa_name()}};
}

}  // namespace ra::backend::cpu
