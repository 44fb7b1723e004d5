#include "backend/fingerprint.h"

#include "backend/cpu/gemm.h"

namespace ra::backend {

nlohmann::json cpu_fingerprint() {
  return {{"cpu_gemm_kernel", cpu::gemm_kernel_name()}};
}

}  // namespace ra::backend
