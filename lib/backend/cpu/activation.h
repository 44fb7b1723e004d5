#pragma once
// The activation functions of the CPU backend, written once: activation_forward and the fused
// epilogues of conv2d_forward and dense_forward apply the same float operations, so a fused
// activation gives the bits of a separate pass.
#include <cmath>
#include <cstdint>

#include "spec/spec.h"

namespace ra::backend::cpu {

// Logistic function without overflow: exp is only ever taken of a non-positive number.
inline float sigmoid(float v) {
  if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
  const float e = std::exp(v);
  return e / (1.0f + e);
}

// y[i] = act(x[i]) for i < count; x and y may be the same array. The switch sits outside the
// loops so that relu vectorises.
inline void activate(spec::Activation act, const float* x, float* y, std::int64_t count) {
  switch (act) {
    case spec::Activation::none:
      if (x != y) {
        for (std::int64_t i = 0; i < count; ++i) y[i] = x[i];
      }
      break;
    case spec::Activation::relu:
      for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      break;
    case spec::Activation::tanh:
      for (std::int64_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
      break;
    case spec::Activation::sigmoid:
      for (std::int64_t i = 0; i < count; ++i) y[i] = sigmoid(x[i]);
      break;
  }
}

}  // namespace ra::backend::cpu
