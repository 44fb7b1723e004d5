#include "optim/sgd.h"

namespace ra::optim {

namespace {
std::vector<std::string> sgd_state_kinds(const spec::OptimizerSpec& spec) {
  if (spec.momentum == 0.0) return {};
  return {"momentum"};
}
}  // namespace

Sgd::Sgd(const spec::OptimizerSpec& spec)
    : ElementwiseOptimizer(spec.lr, spec.decay, spec.weight_decay, sgd_state_kinds(spec)),
      momentum_(static_cast<float>(spec.momentum)),
      one_minus_dampening_(static_cast<float>(1.0 - spec.dampening)),
      nesterov_(spec.nesterov) {}

void Sgd::begin_step(double lr, std::int64_t step_number) {
  lr_ = static_cast<float>(lr);
  first_step_ = step_number == 1;
}

void Sgd::update(float* value, const float* grad, std::span<float* const> state,
                 std::size_t n) const {
  if (state.empty()) {  // plain SGD
    for (std::size_t j = 0; j < n; ++j) value[j] = value[j] - lr_ * decayed_grad(grad[j], value[j]);
    return;
  }
  float* buf = state[0];
  for (std::size_t j = 0; j < n; ++j) {
    const float g = decayed_grad(grad[j], value[j]);
    buf[j] = first_step_ ? g : buf[j] * momentum_ + one_minus_dampening_ * g;
    const float direction = nesterov_ ? g + momentum_ * buf[j] : buf[j];
    value[j] = value[j] - lr_ * direction;
  }
}

}  // namespace ra::optim
