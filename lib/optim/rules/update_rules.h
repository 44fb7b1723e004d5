#pragma once
// The per-element update of every optimizer, written once for the host and the device
// (kernels/optimizer.cu includes this header): the CPU and CUDA backends apply the same fp32
// operations in the same order, so with FMA contraction off on both sides (-ffp-contract=off,
// nvcc --fmad=false) an update gives the same bits on either. The per-step scalars (decayed lr,
// bias corrections) are computed once per step on the host, in double, then rounded to float.
// Formulas and sources: docs/optimizers.md.
#include <cmath>

#include "core/host_device.h"

namespace ra::optim {

enum class RuleKind : int { sgd, sgd_momentum, adam, rmsprop, adadelta };

struct UpdateRule {
  RuleKind kind = RuleKind::sgd;
  float lr = 0;            // this step's learning rate (adam: lr / bias_correction1)
  float weight_decay = 0;  // L2 term added to the gradient (PyTorch)
  // sgd with momentum
  float momentum = 0, one_minus_dampening = 1;
  bool nesterov = false, first_step = false;
  // adam
  float beta1 = 0, beta2 = 0, one_minus_beta1 = 0, one_minus_beta2 = 0, bias_correction2_sqrt = 1;
  // rmsprop, adadelta
  float rho = 0, one_minus_rho = 0;
  // adam, rmsprop, adadelta
  float eps = 0;
};

// The state arrays a rule reads and writes; apply_update dereferences no other, so a caller may
// pass null for the rest. Constant per kind, so a loop per kind knows its states at compile time.
RA_HOST_DEVICE constexpr bool uses_s0(RuleKind kind) {
  return kind != RuleKind::sgd;  // momentum buffer, first moment, mean square, accumulated g^2
}
RA_HOST_DEVICE constexpr bool uses_s1(RuleKind kind) {
  return kind == RuleKind::adam || kind == RuleKind::adadelta;  // second moment, accumulated u^2
}

RA_HOST_DEVICE float decayed_gradient(const UpdateRule& r, float g, float p) {
  // With no weight decay g is returned untouched (adding 0 * p could turn -0 into +0).
  return r.weight_decay == 0.0f ? g : g + r.weight_decay * p;
}

#if defined(__CUDACC__)
#define RA_SQRTF(x) sqrtf(x)
#else
#define RA_SQRTF(x) std::sqrt(x)
#endif

// One element: `value` updated in place; s0, s1 the element's state (unused ones may be null).
RA_HOST_DEVICE void apply_update(const UpdateRule& r, float& value, float grad, float* s0,
                                 float* s1) {
  const float g = decayed_gradient(r, grad, value);
  switch (r.kind) {
    case RuleKind::sgd:
      value = value - r.lr * g;
      break;
    case RuleKind::sgd_momentum: {
      *s0 = r.first_step ? g : *s0 * r.momentum + r.one_minus_dampening * g;
      const float direction = r.nesterov ? g + r.momentum * *s0 : *s0;
      value = value - r.lr * direction;
      break;
    }
    case RuleKind::adam: {
      *s0 = *s0 * r.beta1 + r.one_minus_beta1 * g;
      *s1 = *s1 * r.beta2 + r.one_minus_beta2 * g * g;
      const float denom = RA_SQRTF(*s1) / r.bias_correction2_sqrt + r.eps;
      value = value - r.lr * *s0 / denom;
      break;
    }
    case RuleKind::rmsprop:
      *s0 = r.rho * *s0 + r.one_minus_rho * (g * g);
      value = value - r.lr * g / (RA_SQRTF(*s0) + r.eps);
      break;
    case RuleKind::adadelta: {
      *s0 = r.rho * *s0 + r.one_minus_rho * (g * g);
      const float u = g * RA_SQRTF(*s1 + r.eps) / RA_SQRTF(*s0 + r.eps);
      *s1 = r.rho * *s1 + r.one_minus_rho * (u * u);
      value = value - r.lr * u;
      break;
    }
  }
}

#undef RA_SQRTF

}  // namespace ra::optim
