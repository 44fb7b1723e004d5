#pragma once
// The activation functions of the CPU backend, written once: activation_forward and the fused
// epilogues of conv2d_forward and dense_forward apply the same float operations, so a fused
// activation gives the bits of a separate pass.
#include <cmath>
#include <cstdint>

#include "backend/modes.h"

namespace ra::backend::cpu {

// Logistic function without overflow: exp is only ever taken of a non-positive number.
inline float sigmoid(float v) {
  if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
  const float e = std::exp(v);
  return e / (1.0f + e);
}

// The relu backward: dy where the relu output y is positive, +0 elsewhere (also where y is -0 or
// NaN). dy is an argument, so it is loaded whether or not it is selected: a load under the
// condition is one the vectoriser may not speculate (it cannot prove it safe), which left such
// loops scalar. Every relu backward of the backend (the op, and the relu gates fused into
// conv2d and maxpool2d backward) goes through this one select, so all give the same bits.
inline float relu_backward(float y, float dy) {
  return y > 0.0f ? dy : 0.0f;
}

// dx[i] = relu_backward(y[i], dy[i]) for i < count; dx may be dy.
inline void relu_backward(const float* y, const float* dy, float* dx, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) dx[i] = relu_backward(y[i], dy[i]);
}

// y[i] = act(x[i]) for i < count; x and y may be the same array. The switch sits outside the
// loops so that relu vectorises.
inline void activate(Activation act, const float* x, float* y, std::int64_t count) {
  switch (act) {
    case Activation::none:
      if (x != y) {
        for (std::int64_t i = 0; i < count; ++i) y[i] = x[i];
      }
      break;
    case Activation::relu:
      for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      break;
    case Activation::tanh:
      for (std::int64_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
      break;
    case Activation::sigmoid:
      for (std::int64_t i = 0; i < count; ++i) y[i] = sigmoid(x[i]);
      break;
  }
}

// y[i] = act(x[i] + addend) for i < count: the bias add and the activation in one pass, with
// the bits of the add followed by activate() (x and y may be the same array).
inline void add_then_activate(Activation act, const float* x, float addend, float* y,
                              std::int64_t count) {
  switch (act) {
    case Activation::none:
      for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] + addend;
      break;
    case Activation::relu:
      for (std::int64_t i = 0; i < count; ++i) {
        const float v = x[i] + addend;
        y[i] = v > 0.0f ? v : 0.0f;
      }
      break;
    default:
      for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] + addend;
      activate(act, y, y, count);
      break;
  }
}

}  // namespace ra::backend::cpu
