#include "optim/adam.h"

#include <cmath>

namespace ra::optim {

Adam::Adam(const spec::OptimizerSpec& spec)
    : ElementwiseOptimizer(spec.lr, spec.decay, spec.weight_decay, {"exp_avg", "exp_avg_sq"}),
      beta1_(spec.beta1),
      beta2_(spec.beta2),
      beta1_f_(static_cast<float>(spec.beta1)),
      beta2_f_(static_cast<float>(spec.beta2)),
      one_minus_beta1_(static_cast<float>(1.0 - spec.beta1)),
      one_minus_beta2_(static_cast<float>(1.0 - spec.beta2)),
      eps_(static_cast<float>(spec.eps)) {}

void Adam::begin_step(double lr, std::int64_t step_number) {
  const double t = static_cast<double>(step_number);
  const double bias_correction1 = 1.0 - std::pow(beta1_, t);
  const double bias_correction2 = 1.0 - std::pow(beta2_, t);
  step_size_ = static_cast<float>(lr / bias_correction1);
  bias_correction2_sqrt_ = static_cast<float>(std::sqrt(bias_correction2));
}

void Adam::update(float* value, const float* grad, std::span<float* const> state,
                  std::size_t n) const {
  float* m = state[0];
  float* v = state[1];
  for (std::size_t j = 0; j < n; ++j) {
    const float g = decayed_grad(grad[j], value[j]);
    m[j] = m[j] * beta1_f_ + one_minus_beta1_ * g;
    v[j] = v[j] * beta2_f_ + one_minus_beta2_ * g * g;
    const float denom = std::sqrt(v[j]) / bias_correction2_sqrt_ + eps_;
    value[j] = value[j] - step_size_ * m[j] / denom;
  }
}

}  // namespace ra::optim
