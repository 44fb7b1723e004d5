#include "nn/backend_modes.h"

#include <string>

#include "core/error.h"

namespace ra::nn {

// Switches with no default: -Wswitch names any enumerator added to either enum and not mapped.

backend::Activation to_backend(spec::Activation activation) {
  switch (activation) {
    case spec::Activation::none:
      return backend::Activation::none;
    case spec::Activation::relu:
      return backend::Activation::relu;
    case spec::Activation::tanh:
      return backend::Activation::tanh;
    case spec::Activation::sigmoid:
      return backend::Activation::sigmoid;
  }
  throw RuntimeFailure("activation " + std::to_string(static_cast<int>(activation)) +
                       " has no backend counterpart");
}

backend::KernelMode to_backend(spec::KernelMode mode) {
  switch (mode) {
    case spec::KernelMode::deterministic:
      return backend::KernelMode::deterministic;
    case spec::KernelMode::nondeterministic:
      return backend::KernelMode::nondeterministic;
    case spec::KernelMode::autotune:
      return backend::KernelMode::autotune;
    case spec::KernelMode::batch_invariant:
      return backend::KernelMode::batch_invariant;
  }
  throw RuntimeFailure("kernel mode " + std::to_string(static_cast<int>(mode)) +
                       " has no backend counterpart");
}

}  // namespace ra::nn
