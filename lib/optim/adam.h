#pragma once
// Adam exactly as torch.optim.Adam (1.13, amsgrad=False, maximize=False), with Keras 2.x
// learning-rate decay. At step t (1-based):
//   g = grad + weight_decay * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p = p - (lr_t / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// which is p - lr_t * mhat / (sqrt(vhat) + eps) with mhat = m / (1 - beta1^t),
// vhat = v / (1 - beta2^t), arranged as torch arranges it (the step size and sqrt of the second
// bias correction are per-step scalars, computed in double).
// State: "exp_avg" (m), "exp_avg_sq" (v), torch's names.
#include "optim/elementwise_optimizer.h"

namespace ra::optim {

class Adam final : public ElementwiseOptimizer {
 public:
  explicit Adam(const spec::OptimizerSpec& spec);

 private:
  UpdateRule begin_step(double lr, std::int64_t step_number) override;

  double beta1_, beta2_;
  float beta1_f_, beta2_f_, one_minus_beta1_, one_minus_beta2_, eps_;
};

}  // namespace ra::optim
