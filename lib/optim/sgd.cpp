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

UpdateRule Sgd::begin_step(double lr, std::int64_t step_number) {
  UpdateRule r;
  r.kind = momentum_ == 0.0f ? RuleKind::sgd : RuleKind::sgd_momentum;
  r.lr = static_cast<float>(lr);
  r.momentum = momentum_;
  r.one_minus_dampening = one_minus_dampening_;
  r.nesterov = nesterov_;
  r.first_step = step_number == 1;  // torch: the momentum buffer starts as the gradient
  return r;
}

}  // namespace ra::optim
