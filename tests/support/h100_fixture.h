#pragma once
// The real H100 audit kept as a fixture (tests/audit/fixtures/h100-2026-11-26): its autotuned run
// 0's trace, and the GPU facts train::gpu_fingerprint() reports on a machine like the one it ran
// on. Shared by the algorithm file's tests (tests/rundir) and the pins' (tests/audit).
#include <filesystem>
#include <nlohmann/json.hpp>

namespace ra::test {

inline const std::filesystem::path kH100Trace = std::filesystem::path(REPRO_AUDIT_SOURCE_DIR) /
                                                "tests" / "audit" / "fixtures" / "h100-2026-11-26" /
                                                "autotune" / "run-000.trace.jsonl";

inline nlohmann::json h100_here() {
  return {{"available", true},
          {"gpu", "NVIDIA H100 80GB HBM3"},
          {"compute_capability", "9.0"},
          {"cudnn", "9.19.0"},
          {"cublas", "13.1.0"},
          {"cuda", "13.0"},
          {"driver", "13.0"},
          {"memory_bytes", 85017493504}};
}

}  // namespace ra::test
