#pragma once
// Which backend a run trains on: the spec's "device" (auto | cpu | cuda) against what this build
// and machine offer. cuda without a usable GPU is a runtime failure (exit code 3) naming the
// reason; auto falls back to the CPU with a one-line notice for the caller to show.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/ops.h"
#include "spec/spec.h"

namespace ra::train {

struct BackendChoice {
  std::unique_ptr<backend::Ops> ops;
  std::string notice;  // non-empty when "auto" fell back to the CPU
};

// `mode`: the run's global kernel mode (the CUDA backend pins or autotunes by it); `pins`: the
// convolution algorithms the CUDA backend runs instead (backend/algorithm_pins.h; the CPU has
// none to choose).
BackendChoice make_backend(spec::Device device, int threads, spec::KernelMode mode,
                           std::shared_ptr<const backend::AlgorithmPins> pins = nullptr);

// What `auto` would give on this machine, without creating a backend: "" when it is the GPU or
// the spec says cpu, else the fallback notice.
std::string fallback_notice(spec::Device device);

// The CPU backend's choices that decide its bits (backend/cpu/cpu_fingerprint.h), for the
// environment fingerprint: train, which picks the backend, answers for it, so that record and
// audit include no backend's folder.
nlohmann::json cpu_fingerprint();

// The GPU as the environment fingerprint records it (cuda::device_fingerprint) with "available"
// and, when false, "reason" in place of "unusable_reason"; {"available": false, "reason": ...} in
// a build without CUDA.
nlohmann::json gpu_fingerprint();

}  // namespace ra::train
