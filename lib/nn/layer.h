#pragma once
// A layer of the model: forward/backward pair over batched tensors, with its parameters.
// Layers hold no numeric code of their own: every computation goes through backend::Ops, so the
// same model runs on any backend and every reduction obeys the determinism policy.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "core/memory.h"
#include "core/tensor.h"
#include "nn/backend_modes.h"
#include "spec/resolve.h"
#include "spec/spec.h"

namespace ra::nn {

// A trainable tensor with its gradient (same shape). Names follow PyTorch: "<layer>.weight",
// "<layer>.bias"; layouts too (conv [K,C,R,S], dense [OUT,IN]).
struct Param {
  std::string name;
  Tensor value;
  Tensor grad;
};

// A tensor a layer updates in training but the optimizer does not: PyTorch's buffers (batch
// normalisation's running statistics, "<layer>.running_mean", "<layer>.running_var").
struct NamedBuffer {
  std::string name;
  Tensor value;
};

// What a step needs to know besides the tensors.
struct StepContext {
  bool training = true;
  std::uint64_t step = 0;  // global step index (0-based); the dropout draw
  const spec::DeterminismSpec* determinism = nullptr;

  // The spec's mode for `op`, as the backend takes it.
  backend::KernelMode mode(spec::ReducingOp op) const {
    return to_backend(determinism->mode_for(op));
  }
};

class ActivationLayer;
class BatchNormLayer;
class Conv2dLayer;
class MaxPool2dLayer;

class Layer {
 public:
  // `memory`: where the layer's parameters and scratch live (the backend's memory).
  Layer(spec::ResolvedLayer info, Memory& memory) : info_(std::move(info)), memory_(&memory) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const spec::ResolvedLayer& info() const noexcept { return info_; }
  const std::string& name() const noexcept { return info_.spec.name; }
  // The spec's activation of this layer, as the backend takes it.
  backend::Activation activation() const { return to_backend(info_.spec.activation); }

  // y = layer(x). x is [N, input...]; y is resized to [N, output...].
  virtual void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) = 0;
  // From dy (same shape as y) computes the parameter gradients ('=': they are overwritten) and,
  // when dx != nullptr, the input gradient. y is the output of the forward call of this step.
  virtual void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy,
                        Tensor* dx, const StepContext& ctx) = 0;

  virtual std::vector<Param*> params() { return {}; }
  // Its buffers (NamedBuffer), in a fixed order.
  virtual std::vector<NamedBuffer*> buffers() { return {}; }
  // Whether the layer gave its parameters their initial values itself (batch normalisation: ones
  // and zeros, as every framework does), rather than the spec's initializers through the Model.
  virtual bool initializes_own_params() const { return false; }

  // Whether the output is the input's data under another shape (flatten): the Model then hands the
  // input itself to the next layer, and the next layer's input gradient back as this layer's,
  // instead of copying both (a memory pass each way: 128 x 9216 floats, 4.7 MB, per step in the
  // Keras MNIST convnet). Every layer reads its input and gradients through their element counts
  // and its own geometry, never their shapes, so the unflattened tensors serve as they are.
  virtual bool is_reshape() const { return false; }

  // Whether this layer's activation backward may be left to the layer after it (conv layers with
  // relu, relu layers: a max-pool or conv after them gates its gradient instead, see
  // Ops::maxpool2d_backward and Ops::conv2d_backward_data; dense layers are never followed by
  // either), and the Model's note that it is: dy then arrives with the activation's backward
  // already applied.
  virtual bool can_hand_over_relu_backward() const { return false; }
  void hand_over_relu_backward() noexcept { relu_backward_handed_over_ = true; }
  // Whether the backward of this layer is nothing but dy passed on as the input gradient (a relu
  // layer that handed its backward over): the Model and residual blocks then skip the call and
  // hand dy itself to the layer before, as they do for a reshape.
  virtual bool passes_gradient_through() const { return false; }
  // Whether this layer can apply that relu backward to the input gradient it computes (max-pool:
  // gated by its output; conv: gated by its input), and the Model's note that it must.
  virtual bool can_take_over_relu_backward() const { return false; }
  virtual void take_over_relu_backward() {}

  // What this layer can be fused with, for the Model to ask the backend whether to (a pair runs
  // as one backend call only when Ops::fuses_conv_maxpool says so for its geometries):
  // a conv whose output nothing but the max-pool after it reads returns itself here,
  virtual Conv2dLayer* conv_before_pool() { return nullptr; }
  // and a max-pool, which such a conv can compute in its own forward and backward, here.
  virtual MaxPool2dLayer* pool_after_conv() { return nullptr; }
  // A batch normalisation returns itself here and an activation layer here. In a chain, the two
  // run forward as one backend call (Ops::batchnorm_forward_training_activation: nothing but the
  // activation reads the normalisation's output, its backward reads its input; runs_with_previous
  // in build.h), and a residual block whose body starts with a batch normalisation has it add the
  // shortcut's gradient to the input gradient it computes (Ops::batchnorm_backward_add).
  virtual BatchNormLayer* as_batchnorm() { return nullptr; }
  virtual ActivationLayer* as_activation() { return nullptr; }

 protected:
  bool relu_backward_handed_over() const noexcept { return relu_backward_handed_over_; }
  Memory& memory() const noexcept { return *memory_; }

 private:
  spec::ResolvedLayer info_;
  Memory* memory_;
  bool relu_backward_handed_over_ = false;
};

}  // namespace ra::nn
