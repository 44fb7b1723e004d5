#include "optim/adadelta.h"

#include <cmath>

namespace ra::optim {

Adadelta::Adadelta(const spec::OptimizerSpec& spec)
    : ElementwiseOptimizer(spec.lr, spec.decay, spec.weight_decay, {"square_avg", "acc_delta"}),
      rho_(static_cast<float>(spec.rho)),
      one_minus_rho_(static_cast<float>(1.0 - spec.rho)),
      eps_(static_cast<float>(spec.eps)) {}

UpdateRule Adadelta::begin_step(double lr, std::int64_t /*step_number*/) {
  UpdateRule r;
  r.kind = RuleKind::adadelta;
  r.lr = static_cast<float>(lr);
  r.rho = rho_;
  r.one_minus_rho = one_minus_rho_;
  r.eps = eps_;
  return r;
}

}  // namespace ra::optim
