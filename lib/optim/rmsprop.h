#pragma once
// RMSprop as Keras 2.x (keras/optimizers.py, RMSprop.get_updates), which torch.optim.RMSprop
// (alpha = rho, centered=False, momentum=0) computes too:
//   g = grad + weight_decay * p
//   a = rho * a + (1 - rho) * g^2
//   p = p - lr_t * g / (sqrt(a) + eps)
// State: "square_avg" (a; Keras calls it the accumulator).
#include "optim/elementwise_optimizer.h"

namespace ra::optim {

class RmsProp final : public ElementwiseOptimizer {
 public:
  explicit RmsProp(const spec::OptimizerSpec& spec);

 private:
  UpdateRule begin_step(double lr, std::int64_t step_number) override;

  float rho_, one_minus_rho_, eps_;
};

}  // namespace ra::optim
