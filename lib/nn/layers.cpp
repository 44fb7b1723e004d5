#include "nn/layers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ra::nn {
namespace {

using backend::Activation;
using spec::ReducingOp;

int batch_of(const Tensor& x) {
  return static_cast<int>(x.dim(0));
}

// dz = dy * act'(y) into `scratch` and returns it; without an activation returns dy itself.
const Tensor& through_activation(backend::Ops& ops, Activation act, const Tensor& y,
                                 const Tensor& dy, Tensor& scratch) {
  if (act == Activation::none) return dy;
  scratch.resize(dy.shape());
  ops.activation_backward(act, static_cast<std::int64_t>(dy.size()), y.data(), dy.data(),
                          scratch.data());
  return scratch;
}

Param make_param(const std::string& layer, const char* kind, Shape shape, Memory& memory) {
  return Param{layer + "." + kind, Tensor(shape, memory), Tensor(shape, memory)};
}

}  // namespace

backend::ConvGeometry conv_geometry(const spec::ResolvedLayer& info, int batch) {
  backend::ConvGeometry g;
  g.n = batch;
  g.c = static_cast<int>(info.input[0]);
  g.h = static_cast<int>(info.input[1]);
  g.w = static_cast<int>(info.input[2]);
  g.k = info.spec.filters;
  g.r = info.spec.kernel_h;
  g.s = info.spec.kernel_w;
  g.stride_h = info.spec.stride_h;
  g.stride_w = info.spec.stride_w;
  g.pad_top = info.pad_top;
  g.pad_bottom = info.pad_bottom;
  g.pad_left = info.pad_left;
  g.pad_right = info.pad_right;
  g.p = static_cast<int>(info.output[1]);
  g.q = static_cast<int>(info.output[2]);
  return g;
}

backend::PoolGeometry pool_geometry(const spec::ResolvedLayer& info, int batch) {
  backend::PoolGeometry g;
  g.n = batch;
  g.c = static_cast<int>(info.input[0]);
  g.h = static_cast<int>(info.input[1]);
  g.w = static_cast<int>(info.input[2]);
  g.pool_h = info.spec.pool_h;
  g.pool_w = info.spec.pool_w;
  g.stride_h = info.spec.stride_h;
  g.stride_w = info.spec.stride_w;
  g.pad_top = info.pad_top;
  g.pad_left = info.pad_left;
  g.p = static_cast<int>(info.output[1]);
  g.q = static_cast<int>(info.output[2]);
  return g;
}

backend::DenseGeometry dense_geometry(const spec::ResolvedLayer& info, int batch) {
  return backend::DenseGeometry{batch, static_cast<int>(info.input[0]), info.spec.units};
}

// ---- conv2d ----------------------------------------------------------------------------------
Conv2dLayer::Conv2dLayer(const spec::ResolvedLayer& info, Memory& memory)
    : Layer(info, memory),
      weight_(make_param(info.spec.name, "weight",
                         {info.spec.filters, info.input[0], info.spec.kernel_h, info.spec.kernel_w},
                         memory)) {
  if (info.spec.use_bias) bias_ = make_param(info.spec.name, "bias", {info.spec.filters}, memory);
}

void Conv2dLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext&) {
  const auto g = conv_geometry(info(), batch_of(x));
  y.resize_batched(g.n, info().output);
  ops.conv2d_forward(g, x.data(), weight_.value.data(),
                     info().spec.use_bias ? bias_.value.data() : nullptr, activation(), y.data());
}

void Conv2dLayer::forward_pooled(backend::Ops& ops, const Tensor& x, Tensor& y,
                                 MaxPool2dLayer& pool, Tensor& pooled) {
  const auto g = conv_geometry(info(), batch_of(x));
  y.resize_batched(g.n, info().output);
  std::int32_t* argmax = pool.prepare_forward(y, pooled);
  ops.conv2d_forward_maxpool(g, x.data(), weight_.value.data(),
                             info().spec.use_bias ? bias_.value.data() : nullptr, activation(),
                             pool_geometry(pool.info(), g.n), y.data(), pooled.data(), argmax);
}

void Conv2dLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy,
                           Tensor* dx, const StepContext& ctx) {
  const auto g = conv_geometry(info(), batch_of(x));
  const Tensor& dz = relu_backward_handed_over()
                         ? dy
                         : through_activation(ops, activation(), y, dy, pre_activation_grad_);
  if (info().spec.use_bias) {
    ops.conv2d_backward_filter_bias(g, x.data(), dz.data(), weight_.grad.data(), bias_.grad.data(),
                                    ctx.mode(ReducingOp::conv2d_backward_filter),
                                    ctx.mode(ReducingOp::conv2d_backward_bias));
  } else {
    ops.conv2d_backward_filter(g, x.data(), dz.data(), weight_.grad.data(),
                               ctx.mode(ReducingOp::conv2d_backward_filter));
  }
  if (dx != nullptr) {
    dx->resize(x.shape());
    ops.conv2d_backward_data(g, dz.data(), weight_.value.data(),
                             gate_input_gradient_ ? x.data() : nullptr, dx->data(),
                             ctx.mode(ReducingOp::conv2d_backward_data));
  }
}

void Conv2dLayer::backward_pooled(backend::Ops& ops, const Tensor& x, const MaxPool2dLayer& pool,
                                  const Tensor& pooled, const Tensor& pooled_dy, Tensor& dy,
                                  Tensor* dx, const StepContext& ctx) {
  // (forward_pooled's condition: this layer's output y is never read here.)
  if (!output_read_only_by_next()) {
    throw std::logic_error("Conv2dLayer::backward_pooled: the backward reads the conv output");
  }
  const auto g = conv_geometry(info(), batch_of(x));
  dy.resize_batched(g.n, info().output);
  if (dx != nullptr) dx->resize(x.shape());
  backend::ConvPoolBackwardModes modes;
  modes.pool = ctx.mode(ReducingOp::maxpool2d_backward);
  modes.filter = ctx.mode(ReducingOp::conv2d_backward_filter);
  modes.bias = ctx.mode(ReducingOp::conv2d_backward_bias);
  modes.data = ctx.mode(ReducingOp::conv2d_backward_data);
  ops.conv2d_backward_maxpool(g, pool_geometry(pool.info(), g.n), pool.gradient(pooled, pooled_dy),
                              x.data(), weight_.value.data(),
                              gate_input_gradient_ ? x.data() : nullptr, dy.data(),
                              dx == nullptr ? nullptr : dx->data(), weight_.grad.data(),
                              info().spec.use_bias ? bias_.grad.data() : nullptr, modes);
}

std::vector<Param*> Conv2dLayer::params() {
  if (info().spec.use_bias) return {&weight_, &bias_};
  return {&weight_};
}

// ---- dense -----------------------------------------------------------------------------------
DenseLayer::DenseLayer(const spec::ResolvedLayer& info, Memory& memory)
    : Layer(info, memory),
      weight_(make_param(info.spec.name, "weight", {info.spec.units, info.input[0]}, memory)) {
  if (info.spec.use_bias) bias_ = make_param(info.spec.name, "bias", {info.spec.units}, memory);
}

void DenseLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext&) {
  const auto g = dense_geometry(info(), batch_of(x));
  y.resize({g.n, g.out});
  ops.dense_forward(g, x.data(), weight_.value.data(),
                    info().spec.use_bias ? bias_.value.data() : nullptr, activation(), y.data());
}

void DenseLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy,
                          Tensor* dx, const StepContext& ctx) {
  const auto g = dense_geometry(info(), batch_of(x));
  const Tensor& dz = through_activation(ops, activation(), y, dy, pre_activation_grad_);
  ops.dense_backward_weight(g, x.data(), dz.data(), weight_.grad.data(),
                            ctx.mode(ReducingOp::dense_backward_weight));
  if (info().spec.use_bias) {
    ops.dense_backward_bias(g, dz.data(), bias_.grad.data(),
                            ctx.mode(ReducingOp::dense_backward_bias));
  }
  if (dx != nullptr) {
    dx->resize(x.shape());
    ops.dense_backward_data(g, dz.data(), weight_.value.data(), dx->data(),
                            ctx.mode(ReducingOp::dense_backward_data));
  }
}

std::vector<Param*> DenseLayer::params() {
  if (info().spec.use_bias) return {&weight_, &bias_};
  return {&weight_};
}

// ---- maxpool2d -------------------------------------------------------------------------------
std::int32_t* MaxPool2dLayer::prepare_forward(const Tensor& x, Tensor& y) {
  y.resize_batched(batch_of(x), info().output);
  argmax_.resize(y.size());
  return argmax_.data();
}

void MaxPool2dLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext&) {
  std::int32_t* argmax = prepare_forward(x, y);
  ops.maxpool2d_forward(pool_geometry(info(), batch_of(x)), x.data(), y.data(), argmax);
}

void MaxPool2dLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy,
                              Tensor* dx, const StepContext& ctx) {
  if (dx == nullptr) return;
  const auto g = pool_geometry(info(), batch_of(x));
  dx->resize(x.shape());
  ops.maxpool2d_backward(g, dy.data(), argmax_.data(), gate_with_output_ ? y.data() : nullptr,
                         dx->data(), ctx.mode(ReducingOp::maxpool2d_backward));
}

// ---- dropout ---------------------------------------------------------------------------------
DropoutLayer::DropoutLayer(const spec::ResolvedLayer& info, Memory& memory, rng::PhiloxKey key)
    : Layer(info, memory), key_(key) {}

std::uint32_t DropoutLayer::drop_threshold(float rate) {
  // rate in [0, 1) (validated), so the threshold is in [0, 2^24).
  return static_cast<std::uint32_t>(std::llround(static_cast<double>(rate) * 16777216.0));
}

float DropoutLayer::keep_scale(float rate) {
  return 1.0f / (1.0f - rate);
}

void DropoutLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) {
  y.resize(x.shape());
  masked_ = ctx.training && info().spec.rate > 0.0f;
  if (!masked_) {
    y.copy_from(x);
    return;
  }
  mask_.resize(x.size());
  ops.dropout_forward(static_cast<std::int64_t>(x.size()), drop_threshold(info().spec.rate),
                      keep_scale(info().spec.rate), key_, ctx.step, x.data(), y.data(),
                      mask_.data());
}

void DropoutLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor&, const Tensor& dy,
                            Tensor* dx, const StepContext&) {
  if (dx == nullptr) return;
  dx->resize(x.shape());
  if (!masked_) {
    dx->copy_from(dy);
    return;
  }
  ops.dropout_backward(static_cast<std::int64_t>(dy.size()), keep_scale(info().spec.rate),
                       mask_.data(), dy.data(), dx->data());
}

// ---- activation ------------------------------------------------------------------------------
void ActivationLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext&) {
  y.resize(x.shape());
  ops.activation_forward(activation(), static_cast<std::int64_t>(x.size()), x.data(), y.data());
}

void ActivationLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor& y,
                               const Tensor& dy, Tensor* dx, const StepContext&) {
  if (dx == nullptr) return;
  if (relu_backward_handed_over()) {  // dy is already gated (callers skip this call)
    dx->resize(x.shape());
    dx->copy_from(dy);
    return;
  }
  dx->resize(x.shape());
  ops.activation_backward(activation(), static_cast<std::int64_t>(dy.size()), y.data(), dy.data(),
                          dx->data());
}

// ---- batch normalisation ---------------------------------------------------------------------
backend::ChannelGeometry channel_geometry(const spec::ResolvedLayer& info, int batch) {
  return {batch, static_cast<int>(info.input[0]), static_cast<int>(info.input[1]),
          static_cast<int>(info.input[2])};
}

namespace {

// A [C] tensor in `memory` holding `value` everywhere (uploaded from the host).
Tensor channel_constant(std::int64_t channels, float value, Memory& memory) {
  Tensor host(Shape{channels});
  std::fill(host.data(), host.data() + host.size(), value);
  Tensor t(Shape{channels}, memory);
  t.copy_from(host);
  return t;
}

}  // namespace

BatchNormLayer::BatchNormLayer(const spec::ResolvedLayer& info, Memory& memory)
    : Layer(info, memory),
      weight_{info.spec.name + ".weight", channel_constant(info.input[0], 1.0f, memory),
              Tensor(Shape{info.input[0]}, memory)},
      bias_{info.spec.name + ".bias", channel_constant(info.input[0], 0.0f, memory),
            Tensor(Shape{info.input[0]}, memory)},
      running_mean_{info.spec.name + ".running_mean",
                    channel_constant(info.input[0], 0.0f, memory)},
      running_var_{info.spec.name + ".running_var", channel_constant(info.input[0], 1.0f, memory)},
      saved_mean_(Shape{info.input[0]}, memory),
      saved_inv_std_(Shape{info.input[0]}, memory) {}

void BatchNormLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y,
                             const StepContext& ctx) {
  y.resize(x.shape());
  const backend::ChannelGeometry g = channel_geometry(info(), batch_of(x));
  if (!ctx.training) {
    ops.batchnorm_forward_inference(g, x.data(), weight_.value.data(), bias_.value.data(),
                                    running_mean_.value.data(), running_var_.value.data(),
                                    info().spec.epsilon, y.data());
    return;
  }
  ops.batchnorm_forward_training(g, x.data(), weight_.value.data(), bias_.value.data(),
                                 info().spec.momentum, info().spec.epsilon,
                                 running_mean_.value.data(), running_var_.value.data(),
                                 saved_mean_.data(), saved_inv_std_.data(), y.data(),
                                 ctx.mode(ReducingOp::batchnorm_forward_training));
}

void BatchNormLayer::forward_activated(backend::Ops& ops, const Tensor& x, Tensor& y,
                                       ActivationLayer& act, Tensor& activated,
                                       const StepContext& ctx) {
  if (!ctx.training) {
    forward(ops, x, y, ctx);
    act.forward(ops, y, activated, ctx);
    return;
  }
  y.resize(x.shape());
  activated.resize(x.shape());
  const backend::ChannelGeometry g = channel_geometry(info(), batch_of(x));
  ops.batchnorm_forward_training_activation(
      g, x.data(), weight_.value.data(), bias_.value.data(), info().spec.momentum,
      info().spec.epsilon, running_mean_.value.data(), running_var_.value.data(),
      saved_mean_.data(), saved_inv_std_.data(), act.activation(), y.data(), activated.data(),
      ctx.mode(ReducingOp::batchnorm_forward_training));
}

void BatchNormLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor&, const Tensor& dy,
                              Tensor* dx, const StepContext& ctx) {
  Tensor& input_grad = dx != nullptr ? *dx : input_grad_;
  input_grad.resize(x.shape());
  ops.batchnorm_backward(channel_geometry(info(), batch_of(x)), x.data(), dy.data(),
                         weight_.value.data(), saved_mean_.data(), saved_inv_std_.data(),
                         input_grad.data(), weight_.grad.data(), bias_.grad.data(),
                         ctx.mode(ReducingOp::batchnorm_backward));
}

void BatchNormLayer::backward_add(backend::Ops& ops, const Tensor& x, const Tensor& dy,
                                  const Tensor& addend, Tensor& dx, const StepContext& ctx) {
  dx.resize(x.shape());
  ops.batchnorm_backward_add(channel_geometry(info(), batch_of(x)), x.data(), dy.data(),
                             weight_.value.data(), saved_mean_.data(), saved_inv_std_.data(),
                             addend.data(), dx.data(), weight_.grad.data(), bias_.grad.data(),
                             ctx.mode(ReducingOp::batchnorm_backward));
}

// ---- global average pooling ------------------------------------------------------------------
void GlobalAvgPoolLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y,
                                 const StepContext&) {
  y.resize_batched(x.dim(0), info().output);
  ops.global_avgpool_forward(channel_geometry(info(), batch_of(x)), x.data(), y.data());
}

void GlobalAvgPoolLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor&,
                                  const Tensor& dy, Tensor* dx, const StepContext&) {
  if (dx == nullptr) return;
  dx->resize(x.shape());
  ops.global_avgpool_backward(channel_geometry(info(), batch_of(x)), dy.data(), dx->data());
}

// ---- flatten ---------------------------------------------------------------------------------
void FlattenLayer::forward(backend::Ops&, const Tensor& x, Tensor& y, const StepContext&) {
  y.resize_batched(x.dim(0), info().output);
  y.copy_from(x);
}

void FlattenLayer::backward(backend::Ops&, const Tensor& x, const Tensor&, const Tensor& dy,
                            Tensor* dx, const StepContext&) {
  if (dx == nullptr) return;
  dx->resize(x.shape());
  dx->copy_from(dy);
}

}  // namespace ra::nn
