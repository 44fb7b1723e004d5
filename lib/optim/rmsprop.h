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
  void begin_step(double lr, std::int64_t step_number) override;
  void update(float* value, const float* grad, std::span<float* const> state,
              std::size_t n) const override;

  float rho_, one_minus_rho_, eps_;
  float lr_ = 0.0f;  // this step's lr_t
};

}  // namespace ra::optim
