#pragma once
// Adadelta as Keras 2.x (keras/optimizers.py, Adadelta.get_updates) and torch.optim.Adadelta
// (same formula, Zeiler 2012 with a learning rate):
//   g = grad + weight_decay * p
//   a = rho * a + (1 - rho) * g^2
//   u = g * sqrt(d + eps) / sqrt(a + eps)
//   d = rho * d + (1 - rho) * u^2
//   p = p - lr_t * u
// State: "square_avg" (a), "acc_delta" (d), torch's names (Keras: accumulators,
// delta_accumulators).
#include "optim/elementwise_optimizer.h"

namespace ra::optim {

class Adadelta final : public ElementwiseOptimizer {
 public:
  explicit Adadelta(const spec::OptimizerSpec& spec);

 private:
  UpdateRule begin_step(double lr, std::int64_t step_number) override;

  float rho_, one_minus_rho_, eps_;
};

}  // namespace ra::optim
