#include "optim/rmsprop.h"

#include <cmath>

namespace ra::optim {

RmsProp::RmsProp(const spec::OptimizerSpec& spec)
    : ElementwiseOptimizer(spec.lr, spec.decay, spec.weight_decay, {"square_avg"}),
      rho_(static_cast<float>(spec.rho)),
      one_minus_rho_(static_cast<float>(1.0 - spec.rho)),
      eps_(static_cast<float>(spec.eps)) {}

void RmsProp::begin_step(double lr, std::int64_t /*step_number*/) {
  lr_ = static_cast<float>(lr);
}

void RmsProp::update(float* value, const float* grad, std::span<float* const> state,
                     std::size_t n) const {
  float* a = state[0];
  for (std::size_t j = 0; j < n; ++j) {
    const float g = decayed_grad(grad[j], value[j]);
    a[j] = rho_ * a[j] + one_minus_rho_ * (g * g);
    value[j] = value[j] - lr_ * g / (std::sqrt(a[j]) + eps_);
  }
}

}  // namespace ra::optim
