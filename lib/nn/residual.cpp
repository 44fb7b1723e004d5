#include "nn/residual.h"

#include "nn/layers.h"

namespace ra::nn {

ResidualLayer::ResidualLayer(const spec::ResolvedLayer& info, const ModelSeeds& seeds,
                             Memory& memory)
    : Layer(info, memory) {
  for (const spec::ResolvedLayer& inner : info.body) {
    body_.push_back(build_initialized_layer(inner, seeds, memory));
    body_outputs_.emplace_back(Shape{0}, memory);
    body_grads_.emplace_back(Shape{0}, memory);
  }
  if (!info.shortcut.empty()) {
    projection_ = build_initialized_layer(info.shortcut.front(), seeds, memory);
  }
  hand_over_relu_backwards(body_);
  body_with_previous_ = runs_with_previous(body_);
  if (!body_.empty()) head_add_name_ = body_.front()->name() + "+" + name();
  for (std::size_t i = 0; i < body_.size(); ++i) {
    body_pair_names_.push_back(i + 1 < body_.size() ? body_[i]->name() + "+" + body_[i + 1]->name()
                                                    : std::string());
  }
}

std::vector<Param*> ResidualLayer::params() {
  std::vector<Param*> all;
  for (const auto& layer : body_) {
    for (Param* p : layer->params()) all.push_back(p);
  }
  if (projection_) {
    for (Param* p : projection_->params()) all.push_back(p);
  }
  return all;
}

std::vector<NamedBuffer*> ResidualLayer::buffers() {
  std::vector<NamedBuffer*> all;
  for (const auto& layer : body_) {
    for (NamedBuffer* b : layer->buffers()) all.push_back(b);
  }
  return all;
}

void ResidualLayer::forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) {
  const Tensor* in = &x;
  for (std::size_t i = 0; i < body_.size(); ++i) {
    forward_in_chain(ops, body_, i, body_with_previous_, body_pair_names_, *in, body_outputs_, ctx);
    in = &body_outputs_[i];
  }
  const Tensor* shortcut = &x;
  if (projection_) {
    ops.enter_layer(projection_->name());
    projection_->forward(ops, x, projection_output_, ctx);
    shortcut = &projection_output_;
  }
  ops.enter_layer(name());
  y.resize(in->shape());
  const auto count = static_cast<std::int64_t>(y.size());
  ops.residual_add(count, in->data(), shortcut->data(), y.data());
  if (activation() != backend::Activation::none) {
    ops.activation_forward(activation(), count, y.data(), y.data());
  }
}

void ResidualLayer::backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy,
                             Tensor* dx, const StepContext& ctx) {
  const Tensor* grad = &dy;  // of the add's output
  if (activation() != backend::Activation::none) {
    sum_grad_.resize(dy.shape());
    ops.activation_backward(activation(), static_cast<std::int64_t>(dy.size()), y.data(), dy.data(),
                            sum_grad_.data());
    grad = &sum_grad_;
  }
  // The body, last layer first. Its first layer computes an input gradient only when the block
  // must (dx), as the Model asks of its first layer.
  // A body that starts with a batch normalisation adds an identity shortcut's gradient as it
  // stores its input gradient: the add's pass is saved.
  BatchNormLayer* head = body_.empty() ? nullptr : body_.front()->as_batchnorm();
  const bool head_adds = head != nullptr && !projection_ && dx != nullptr;
  const Tensor* body_dx = grad;
  for (std::size_t i = body_.size(); i-- > 0;) {
    if (body_[i]->passes_gradient_through()) continue;  // body_dx is its input gradient as it is
    if (i == 0 && head_adds) {
      ops.enter_layer(head_add_name_);
      head->backward_add(ops, x, *body_dx, *grad, *dx, ctx);
      return;
    }
    const Tensor& in = i == 0 ? x : body_outputs_[i - 1];
    Tensor* into = i == 0 && dx == nullptr ? nullptr : &body_grads_[i];
    ops.enter_layer(body_[i]->name());
    body_[i]->backward(ops, in, body_outputs_[i], *body_dx, into, ctx);
    body_dx = into;
  }
  const Tensor* shortcut_dx = grad;
  if (projection_) {
    ops.enter_layer(projection_->name());
    projection_->backward(ops, x, projection_output_, *grad,
                          dx != nullptr ? &projection_grad_ : nullptr, ctx);
    shortcut_dx = &projection_grad_;
  }
  if (dx == nullptr) return;
  ops.enter_layer(name());
  dx->resize(x.shape());
  ops.residual_add(static_cast<std::int64_t>(dx->size()), body_dx->data(), shortcut_dx->data(),
                   dx->data());
}

}  // namespace ra::nn
