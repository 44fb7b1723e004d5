#include "optim/rmsprop.h"

#include <cmath>

namespace ra::optim {

RmsProp::RmsProp(const spec::OptimizerSpec& spec)
    : ElementwiseOptimizer(spec.lr, spec.decay, spec.weight_decay, {"square_avg"}),
      rho_(static_cast<float>(spec.rho)),
      one_minus_rho_(static_cast<float>(1.0 - spec.rho)),
      eps_(static_cast<float>(spec.eps)) {}

UpdateRule RmsProp::begin_step(double lr, std::int64_t /*step_number*/) {
  UpdateRule r;
  r.kind = RuleKind::rmsprop;
  r.lr = static_cast<float>(lr);
  r.rho = rho_;
  r.one_minus_rho = one_minus_rho_;
  r.eps = eps_;
  return r;
}

}  // namespace ra::optim
