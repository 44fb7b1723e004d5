#pragma once
// One digest over all of a model's parameters: XXH3-128 over, for each parameter in order, its
// name and its own tensor digest (dtype, shape, bytes). Equal iff every parameter is bitwise equal.
#include "core/digest.h"
#include "nn/model.h"

namespace ra::nn {
Digest128 parameters_digest(const Model& model);
}
