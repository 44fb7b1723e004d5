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
  void begin_step(double lr, std::int64_t step_number) override;
  void update(float* value, const float* grad, std::span<float* const> state,
              std::size_t n) const override;

  float rho_, one_minus_rho_, eps_;
  float lr_ = 0.0f;  // this step's lr_t
};

}  // namespace ra::optim
