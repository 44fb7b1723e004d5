#pragma once
// The memory a run plans (spec/memory_plan.h) checked once the data set sizes are known, before
// the data is generated or converted and before any model is built: against the spec limit
// (an idx set's size is known only from its file; exit 2 naming the set), then against the memory
// this machine can give the process (exit 3: a property of the machine, like a missing GPU).
#include <cstdint>

#include "spec/spec.h"

namespace ra::train {

// Physical memory, or the cgroup's memory.max when lower (a container); 0 when unknown.
std::uint64_t available_memory_bytes();

// Throws InputError when the plan of `spec` with these set sizes is above spec::kMaxPlannedBytes,
// RuntimeFailure when the part of it held in host memory (the data and the step records; the
// model and activations too when spec.device is "cpu") is above `available` (0 = not checked).
void check_memory(const spec::ExperimentSpec& spec, std::int64_t train_samples,
                  std::int64_t eval_samples, std::uint64_t available);

}  // namespace ra::train
