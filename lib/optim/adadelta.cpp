#include "optim/adadelta.h"

#include <cmath>

namespace ra::optim {

Adadelta::Adadelta(const spec::OptimizerSpec& spec)
    : ElementwiseOptimizer(spec.lr, spec.decay, spec.weight_decay, {"square_avg", "acc_delta"}),
      rho_(static_cast<float>(spec.rho)),
      one_minus_rho_(static_cast<float>(1.0 - spec.rho)),
      eps_(static_cast<float>(spec.eps)) {}

void Adadelta::begin_step(double lr, std::int64_t /*step_number*/) {
  lr_ = static_cast<float>(lr);
}

void Adadelta::update(float* value, const float* grad, std::span<float* const> state,
                      std::size_t n) const {
  float* a = state[0];
  float* d = state[1];
  for (std::size_t j = 0; j < n; ++j) {
    const float g = decayed_grad(grad[j], value[j]);
    a[j] = rho_ * a[j] + one_minus_rho_ * (g * g);
    const float u = g * std::sqrt(d[j] + eps_) / std::sqrt(a[j] + eps_);
    d[j] = rho_ * d[j] + one_minus_rho_ * (u * u);
    value[j] = value[j] - lr_ * u;
  }
}

}  // namespace ra::optim
