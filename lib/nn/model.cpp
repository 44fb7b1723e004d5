#include "nn/model.h"

#include <stdexcept>

#include "nn/init.h"
#include "nn/layers.h"
#include "nn/residual.h"
#include "rng/stream.h"

namespace ra::nn {
namespace {

// Keras' fans: dense [out, in] -> (in, out); conv [K, C, R, S] -> (C*R*S, K*R*S).
void fans(const Shape& weight_shape, std::int64_t& fan_in, std::int64_t& fan_out) {
  std::int64_t receptive = 1;
  for (std::size_t i = 2; i < weight_shape.size(); ++i) receptive *= weight_shape[i];
  fan_in = weight_shape[1] * receptive;
  fan_out = weight_shape[0] * receptive;
}

std::unique_ptr<Layer> build_layer(const spec::ResolvedLayer& info, const ModelSeeds& seeds,
                                   Memory& memory) {
  using spec::LayerType;
  switch (info.spec.type) {
    case LayerType::conv2d:
      return std::make_unique<Conv2dLayer>(info, memory);
    case LayerType::dense:
      return std::make_unique<DenseLayer>(info, memory);
    case LayerType::maxpool2d:
      return std::make_unique<MaxPool2dLayer>(info, memory);
    case LayerType::dropout:
      return std::make_unique<DropoutLayer>(
          info, memory, rng::derive_key(seeds.dropout, rng::dropout_stream(info.spec.name)));
    case LayerType::activation:
      return std::make_unique<ActivationLayer>(info, memory);
    case LayerType::flatten:
      return std::make_unique<FlattenLayer>(info, memory);
    case LayerType::batchnorm:
      return std::make_unique<BatchNormLayer>(info, memory);
    case LayerType::global_avgpool:
      return std::make_unique<GlobalAvgPoolLayer>(info, memory);
    case LayerType::residual:
      return std::make_unique<ResidualLayer>(info, seeds, memory);
  }
  throw std::logic_error("unknown layer type");
}

}  // namespace

std::unique_ptr<Layer> build_initialized_layer(const spec::ResolvedLayer& info,
                                               const ModelSeeds& seeds, Memory& memory) {
  std::unique_ptr<Layer> layer = build_layer(info, seeds, memory);
  if (layer->initializes_own_params()) return layer;
  for (Param* p : layer->params()) {
    const bool is_bias = p->value.rank() == 1;
    const spec::Initializer kind =
        is_bias ? info.spec.bias_initializer : info.spec.kernel_initializer;
    std::int64_t fan_in = 0, fan_out = 0;
    if (is_bias) {
      fan_in = fan_out = p->value.dim(0);
    } else {
      fans(p->value.shape(), fan_in, fan_out);
    }
    Tensor initial(p->value.shape());
    initialize(initial, kind, fan_in, fan_out,
               rng::derive_key(seeds.init, rng::init_stream(p->name)));
    p->value.copy_from(initial);
  }
  return layer;
}

void hand_over_relu_backwards(const std::vector<std::unique_ptr<Layer>>& chain) {
  // A max-pool or conv right after a relu (a conv's or a relu layer's) applies that relu's
  // backward to the input gradient it computes (the gates of Ops::maxpool2d_backward and
  // conv2d_backward_data).
  for (std::size_t i = 1; i < chain.size(); ++i) {
    if (chain[i]->can_take_over_relu_backward() && chain[i - 1]->can_hand_over_relu_backward()) {
      chain[i]->take_over_relu_backward();
      chain[i - 1]->hand_over_relu_backward();
    }
  }
}

std::vector<bool> runs_with_previous(const std::vector<std::unique_ptr<Layer>>& chain) {
  std::vector<bool> with_previous(chain.size(), false);
  for (std::size_t i = 1; i < chain.size(); ++i) {
    with_previous[i] =
        chain[i - 1]->as_batchnorm() != nullptr && chain[i]->as_activation() != nullptr;
  }
  return with_previous;
}

void forward_in_chain(backend::Ops& ops, const std::vector<std::unique_ptr<Layer>>& chain,
                      std::size_t i, const std::vector<bool>& with_previous,
                      const std::vector<std::string>& pair_names, const Tensor& x,
                      std::vector<Tensor>& outputs, const StepContext& ctx) {
  if (with_previous[i]) return;  // computed with the layer before it
  if (i + 1 < chain.size() && with_previous[i + 1]) {
    ops.enter_layer(pair_names[i]);
    chain[i]->as_batchnorm()->forward_activated(ops, x, outputs[i], *chain[i + 1]->as_activation(),
                                                outputs[i + 1], ctx);
    return;
  }
  ops.enter_layer(chain[i]->name());
  chain[i]->forward(ops, x, outputs[i], ctx);
}

Model::Model(const spec::ResolvedModel& resolved, ModelSeeds seeds, Memory& memory)
    : resolved_(resolved), memory_(&memory) {
  for (const spec::ResolvedLayer& info : resolved_.layers) {
    layers_.push_back(build_initialized_layer(info, seeds, memory));
    for (Param* p : layers_.back()->params()) params_.push_back(p);
    for (NamedBuffer* b : layers_.back()->buffers()) buffers_.push_back(b);
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    outputs_.emplace_back(Shape{0}, memory);
    grads_.emplace_back(Shape{0}, memory);
    // The last layer's output is the model's, whose shape the loss and the metrics read.
    passed_through_.push_back(layers_[i]->is_reshape() && i + 1 < layers_.size());
  }
  inputs_.assign(layers_.size(), nullptr);
  hand_over_relu_backwards(layers_);
  pooled_by_previous_.assign(layers_.size(), false);
  activated_with_previous_ = runs_with_previous(layers_);
  pair_names_.resize(layers_.size());
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
    pair_names_[i] = layers_[i]->name() + "+" + layers_[i + 1]->name();
  }
}

bool Model::pools_with_conv(backend::Ops& ops, std::size_t i, int batch) {
  if (i == 0) return false;
  Conv2dLayer* conv = layers_[i - 1]->conv_before_pool();
  MaxPool2dLayer* pool = layers_[i]->pool_after_conv();
  return conv != nullptr && pool != nullptr &&
         ops.fuses_conv_maxpool(conv_geometry(conv->info(), batch),
                                pool_geometry(pool->info(), batch));
}

const Tensor& Model::forward(backend::Ops& ops, const Tensor& input, const StepContext& ctx) {
  input_ = &input;
  const Tensor* x = &input;
  const int batch = static_cast<int>(input.dim(0));
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    pooled_by_previous_[i] = pools_with_conv(ops, i, batch);
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    inputs_[i] = x;
    if (passed_through_[i]) continue;  // the next layer reads x itself
    if (i + 1 < layers_.size() && pooled_by_previous_[i + 1]) {
      ops.enter_layer(pair_names_[i]);
      layers_[i]->conv_before_pool()->forward_pooled(
          ops, *x, outputs_[i], *layers_[i + 1]->pool_after_conv(), outputs_[i + 1]);
    } else if (!pooled_by_previous_[i]) {  // else: computed with the conv before it
      forward_in_chain(ops, layers_, i, activated_with_previous_, pair_names_, *x, outputs_, ctx);
    }
    x = &outputs_[i];
  }
  return *x;
}

void Model::backward(backend::Ops& ops, const Tensor& output_grad, const StepContext& ctx) {
  if (input_ == nullptr) throw std::logic_error("Model::backward before forward");
  // Where layer j's input gradient goes. The model input's is never needed: the first layer that
  // computes anything (a flatten before it passes its input through) skips that costly part.
  const auto input_gradient = [&](std::size_t j) {
    return inputs_[j] == input_ ? nullptr : &grads_[j];
  };
  const Tensor* dy = &output_grad;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    // dy is the layer before's gradient as it is (a reshape, or a relu the next layer applied)
    if (passed_through_[i] || layers_[i]->passes_gradient_through()) continue;
    if (pooled_by_previous_[i]) {
      // The pool and the conv before it in one call, as in forward: grads_[i] (the conv output's
      // gradient) is where the backend may store the pool's dx; the conv's dx goes on as usual.
      const std::size_t c = i - 1;
      Tensor* conv_dx = input_gradient(c);
      ops.enter_layer(pair_names_[c]);
      layers_[c]->conv_before_pool()->backward_pooled(ops, *inputs_[c],
                                                      *layers_[i]->pool_after_conv(), outputs_[i],
                                                      *dy, grads_[i], conv_dx, ctx);
      dy = conv_dx;
      --i;  // the conv is done
      continue;
    }
    Tensor* dx = input_gradient(i);
    ops.enter_layer(layers_[i]->name());
    layers_[i]->backward(ops, *inputs_[i], outputs_[i], *dy, dx, ctx);
    dy = dx;
  }
}

}  // namespace ra::nn
