#pragma once
// The concrete layers. Each owns its parameters and the scratch it needs between forward and
// backward (pre-activation gradients, pooling argmax, dropout masks).
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "nn/layer.h"
#include "rng/philox.h"

namespace ra::nn {

backend::ConvGeometry conv_geometry(const spec::ResolvedLayer& info, int batch);
backend::PoolGeometry pool_geometry(const spec::ResolvedLayer& info, int batch);
backend::DenseGeometry dense_geometry(const spec::ResolvedLayer& info, int batch);
backend::ChannelGeometry channel_geometry(const spec::ResolvedLayer& info, int batch);

class MaxPool2dLayer;

// conv2d with optional bias and fused activation: y = act(conv(x, w) + b).
class Conv2dLayer final : public Layer {
 public:
  Conv2dLayer(const spec::ResolvedLayer& info, Memory& memory);
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
  std::vector<Param*> params() override;
  bool can_hand_over_relu_backward() const override {
    return info().spec.activation == spec::Activation::relu;
  }
  // The layer before ends in relu: its relu backward is applied as dx is stored, gated by x.
  bool can_take_over_relu_backward() const override { return true; }
  void take_over_relu_backward() override { gate_input_gradient_ = true; }

  // Whether the max-pool after this layer may take its input straight from forward_pooled: only
  // if the backward pass never reads this layer's output y, which a fusing backend leaves
  // unwritten (no activation, or a relu whose backward the pool took over).
  bool output_read_only_by_next() const {
    const spec::Activation act = info().spec.activation;
    return act == spec::Activation::none ||
           (act == spec::Activation::relu && relu_backward_handed_over());
  }
  Conv2dLayer* conv_before_pool() override { return output_read_only_by_next() ? this : nullptr; }
  // This layer's forward and the max-pool's after it in one backend call
  // (Ops::conv2d_forward_maxpool): y keeps the conv output's shape, pooled gets the pool's output.
  void forward_pooled(backend::Ops& ops, const Tensor& x, Tensor& y, MaxPool2dLayer& pool,
                      Tensor& pooled);
  // The max-pool's backward and this layer's in one backend call (Ops::conv2d_backward_maxpool),
  // from the pool's output gradient pooled_dy: dy gets this layer's output gradient where the
  // backend stores it (it need not), dx (when not null) this layer's input gradient.
  void backward_pooled(backend::Ops& ops, const Tensor& x, const MaxPool2dLayer& pool,
                       const Tensor& pooled, const Tensor& pooled_dy, Tensor& dy, Tensor* dx,
                       const StepContext& ctx);

 private:
  Param weight_, bias_;
  Tensor pre_activation_grad_{Shape{0}, memory()};  // dy * act'(y), reused between steps
  bool gate_input_gradient_ = false;
};

// dense (PyTorch Linear layout) with optional bias and fused activation.
class DenseLayer final : public Layer {
 public:
  DenseLayer(const spec::ResolvedLayer& info, Memory& memory);
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
  std::vector<Param*> params() override;

 private:
  Param weight_, bias_;
  Tensor pre_activation_grad_{Shape{0}, memory()};
};

class MaxPool2dLayer final : public Layer {
 public:
  using Layer::Layer;
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
  // The layer before ends in relu and handed its relu backward over: gate dy by this layer's
  // output (one pass over the pooled gradient instead of one over the whole input gradient).
  bool can_take_over_relu_backward() const override { return true; }
  void take_over_relu_backward() override { gate_with_output_ = true; }
  MaxPool2dLayer* pool_after_conv() override { return this; }

  // What forward does before pooling: sizes y for input x and the argmax; returns the argmax.
  std::int32_t* prepare_forward(const Tensor& x, Tensor& y);
  // What backward passes to Ops::maxpool2d_backward but dx, for output y and its gradient dy.
  backend::MaxPoolGradient gradient(const Tensor& y, const Tensor& dy) const {
    return {dy.data(), argmax_.data(), gate_with_output_ ? y.data() : nullptr};
  }

 private:
  Buffer<std::int32_t> argmax_{memory()};
  bool gate_with_output_ = false;
};

// Inverted dropout; identity outside training. The mask of step s is drawn from the layer's
// Philox stream with draw index s, so it depends on nothing but (seed, layer name, step, element).
class DropoutLayer final : public Layer {
 public:
  DropoutLayer(const spec::ResolvedLayer& info, Memory& memory, rng::PhiloxKey key);
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;

  // Threshold on the top 24 bits of a Philox word: drop when below round(rate * 2^24).
  static std::uint32_t drop_threshold(float rate);
  static float keep_scale(float rate);  // 1 / (1 - rate), computed in float as the frameworks do

 private:
  rng::PhiloxKey key_;
  Buffer<std::uint8_t> mask_{memory()};
  bool masked_ = false;  // whether the last forward applied a mask (training) or was identity
};

class ActivationLayer final : public Layer {
 public:
  using Layer::Layer;
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
  // A relu layer before a conv or max-pool: its backward is their gate (pre-activation ResNets
  // run batchnorm, relu, conv in every block).
  bool can_hand_over_relu_backward() const override {
    return info().spec.activation == spec::Activation::relu;
  }
  bool passes_gradient_through() const override { return relu_backward_handed_over(); }
  ActivationLayer* as_activation() override { return this; }
};

// Batch normalisation over the channels of a [C, H, W] input (PyTorch's BatchNorm2d): in training
// the batch's statistics, which update the running ones; outside training the running ones.
// Parameters "<name>.weight" (gamma, ones) and "<name>.bias" (beta, zeros); buffers
// "<name>.running_mean" (zeros) and "<name>.running_var" (ones).
class BatchNormLayer final : public Layer {
 public:
  BatchNormLayer(const spec::ResolvedLayer& info, Memory& memory);
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
  std::vector<Param*> params() override { return {&weight_, &bias_}; }
  std::vector<NamedBuffer*> buffers() override { return {&running_mean_, &running_var_}; }
  bool initializes_own_params() const override { return true; }
  BatchNormLayer* as_batchnorm() override { return this; }
  // This layer's forward (into y) and the activation layer's after it (into activated) in one
  // backend call in training (Ops::batchnorm_forward_training_activation: y may stay unwritten),
  // the two calls outside it.
  void forward_activated(backend::Ops& ops, const Tensor& x, Tensor& y, ActivationLayer& act,
                         Tensor& activated, const StepContext& ctx);
  // backward, with dx = this layer's input gradient + addend, in one backend call
  // (Ops::batchnorm_backward_add); addend may alias neither dy nor dx.
  void backward_add(backend::Ops& ops, const Tensor& x, const Tensor& dy, const Tensor& addend,
                    Tensor& dx, const StepContext& ctx);

 private:
  Param weight_, bias_;
  NamedBuffer running_mean_, running_var_;
  Tensor saved_mean_, saved_inv_std_;      // the batch's statistics, for backward
  Tensor input_grad_{Shape{0}, memory()};  // dx when the Model needs none (the op writes one)
};

// Global average pooling: [C, H, W] -> [C], each channel's mean.
class GlobalAvgPoolLayer final : public Layer {
 public:
  using Layer::Layer;
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
};

class FlattenLayer final : public Layer {
 public:
  using Layer::Layer;
  bool is_reshape() const override { return true; }
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
};

}  // namespace ra::nn
