#pragma once
// SGD exactly as torch.optim.SGD (1.13, maximize=False), with Keras 2.x learning-rate decay:
//   g   = grad + weight_decay * p
//   buf = g                                    on the first step (torch clones g, no dampening)
//   buf = momentum * buf + (1 - dampening) * g on later steps
//   g   = nesterov ? g + momentum * buf : buf  (only when momentum != 0)
//   p   = p - lr_t * g
// State: "momentum" (the buffer), only when momentum != 0.
#include "optim/elementwise_optimizer.h"

namespace ra::optim {

class Sgd final : public ElementwiseOptimizer {
 public:
  explicit Sgd(const spec::OptimizerSpec& spec);

 private:
  UpdateRule begin_step(double lr, std::int64_t step_number) override;

  float momentum_;
  float one_minus_dampening_;  // 1 - dampening, computed in double then rounded (as torch's alpha)
  bool nesterov_;
};

}  // namespace ra::optim
