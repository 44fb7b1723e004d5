#pragma once
// Optimizer updates on the device: optim::apply_update (lib/optim/rules/update_rules.h, the same
// code the host optimizer runs) per element. value, s0, s1 updated in place ('='); grad read.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/device_value.h"
#include "optim/rules/update_rules.h"

namespace ra::kernels {

// s0/s1: the rule's state arrays (null when the rule has none). Elementwise: deterministic.
void optimizer_update(cudaStream_t stream, const ra::optim::UpdateRule& rule, std::int64_t count,
                      float* value, const float* grad, float* s0, float* s1);
// The same with the rule read from device memory as the kernel runs (kernels/device_value.h).
void optimizer_update(cudaStream_t stream, DeviceValue<ra::optim::UpdateRule> rule,
                      std::int64_t count, float* value, const float* grad, float* s0, float* s1);

}  // namespace ra::kernels
