#pragma once
// What a trace's environment fingerprint records about the backends' own choices, asked of the
// backend so that the recorder needs no backend internals. The device facts of a device backend
// come from its Ops (Ops::device_fingerprint); this is what holds for the whole process.
#include <nlohmann/json.hpp>

namespace ra::backend::cpu {

// The CPU backend's choices that decide its bits, as fingerprint keys (docs/trace-format.md):
//   "cpu_gemm_kernel"  the instruction set its GEMM, convolution and pooling kernels run:
//                      "portable", "avx2-fma" or "avx512-fma" (FMA kernels give other bits than
//                      the portable one), chosen once per process from the CPU and
//                      REPRO_AUDIT_GEMM. Throws as that choice does (an unknown or unrunnable
//                      REPRO_AUDIT_GEMM).
// Present whichever backend a run uses: a CUDA run's host-side steps do not use these kernels,
// but the key lets traces of either kind be compared key for key.
nlohmann::json cpu_fingerprint();

}  // namespace ra::backend::cpu
