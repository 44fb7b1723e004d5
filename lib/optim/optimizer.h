#pragma once
// Optimizers: one update of every trainable parameter per step, in fp32 like the frameworks they
// mirror (formulas and sources in docs/optimizers.md). SGD and Adam follow torch.optim; RMSprop
// and Adadelta follow Keras 2.x (torch.optim.RMSprop/Adadelta compute the same); the learning
// rate decays as Keras 2.x `decay`; `weight_decay` is PyTorch's L2 term added to the gradient.
//
// Every update is elementwise: element j of a parameter depends only on element j of its
// gradient and state, so results are the same bits however the work is split.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "optim/rules/update_digests.h"
#include "optim/rules/update_rules.h"
#include "spec/spec.h"

namespace ra::optim {

struct Parameter {
  std::string name;    // "conv2d_0.weight"
  Tensor* value;       // updated in place
  const Tensor* grad;  // same shape
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter. The list (names, shapes, order) must be the same at every call
  // (state is created on the first call); a mismatch throws std::logic_error. With `digests`, the
  // update also takes the chunk digests of every tensor it touches where the backend can fuse them
  // (digests->complete says whether it did).
  virtual void step(const std::vector<Parameter>& params, UpdateDigests* digests = nullptr) = 0;

  // Completed steps.
  std::int64_t iterations() const noexcept { return iterations_; }
  // Back to `iterations` completed steps, after steps whose device work never ran (a training
  // step captured as a CUDA graph whose capture failed: backend/ops.h end_step). Their host side
  // is the count alone (the rule comes from it; the state lives where the updates run, which
  // did not). std::logic_error beyond the present count.
  void rewind(std::int64_t iterations);
  // The lr the NEXT step will use: lr / (1 + decay * iterations()) (Keras 2.x time decay).
  double learning_rate() const noexcept;

  // Named state tensors, e.g. {"conv2d_0.weight.momentum", &t}, in a stable order (parameter
  // order, then state kind), for digests and snapshots. Empty before the first step and for
  // optimizers without state (SGD without momentum). Pointers stay valid for the optimizer's life.
  virtual std::vector<std::pair<std::string, const Tensor*>> state() const = 0;

  // A checkpoint's optimizer (train/checkpoint.h): `iterations` completed steps (the learning
  // rate's schedule position) and the state tensors by the names state() gives them, copied into
  // state created for `params` (zeros for a name `state` lacks: a test-only restore fault).
  // std::logic_error when `params` differs from the layout of an earlier step.
  virtual void restore(const std::vector<Parameter>& params, std::int64_t iterations,
                       const std::vector<std::pair<std::string, Tensor>>& state) = 0;

  // How a step's rule is applied to parameters in device memory: the device backend's
  // Ops::optimizer_update. Without one, parameters must be in host memory. With non-null
  // `digests` it also writes their chunk digests where it can, and returns whether it did.
  using DeviceUpdate =
      std::function<bool(const UpdateRule&, std::int64_t n, float* value, const float* grad,
                         float* s0, float* s1, const ChunkDigestTargets* digests)>;
  void set_device_update(DeviceUpdate update) { device_update_ = std::move(update); }

 protected:
  DeviceUpdate device_update_;
  Optimizer(double lr, double decay) : lr_(lr), decay_(decay) {}
  std::int64_t iterations_ = 0;

 private:
  double lr_;
  double decay_;
};

// Builds the optimizer a spec names. Throws ra::ValidationError (paths "optimizer.<field>") for
// hyperparameters out of range: negative lr/decay/weight_decay/momentum/eps, betas or rho
// outside [0, 1), dampening outside [0, 1], nesterov without momentum or with dampening.
std::unique_ptr<Optimizer> make_optimizer(const spec::OptimizerSpec& spec);

}  // namespace ra::optim
