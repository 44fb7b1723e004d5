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

UpdateRule Adam::begin_step(double lr, std::int64_t step_number) {
  const double t = static_cast<double>(step_number);
  const double bias_correction1 = 1.0 - std::pow(beta1_, t);
  const double bias_correction2 = 1.0 - std::pow(beta2_, t);
  UpdateRule r;
  r.kind = RuleKind::adam;
  r.lr = static_cast<float>(lr / bias_correction1);  // torch's step_size
  r.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  r.beta1 = beta1_f_;
  r.beta2 = beta2_f_;
  r.one_minus_beta1 = one_minus_beta1_;
  r.one_minus_beta2 = one_minus_beta2_;
  r.eps = eps_;
  return r;
}

}  // namespace ra::optim
