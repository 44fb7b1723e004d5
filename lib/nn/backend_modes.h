#pragma once
// Where the experiment spec meets the backend: the spec's Activation and KernelMode (what a user
// writes) turned into the backend's own enums (backend/modes.h, what an op takes). backend does
// not include the spec, so every spec value on its way into an op call passes through here.
#include "backend/modes.h"
#include "spec/spec.h"

namespace ra::nn {

backend::Activation to_backend(spec::Activation activation);
backend::KernelMode to_backend(spec::KernelMode mode);

}  // namespace ra::nn
