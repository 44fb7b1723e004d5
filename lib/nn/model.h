#pragma once
// The model assembled from a resolved spec: a chain of layers, their activations and gradients.
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/ops.h"
#include "nn/build.h"
#include "nn/layer.h"
#include "spec/resolve.h"

namespace ra::nn {

class Model {
 public:
  // Builds every layer in `memory` (the backend's) and initialises every parameter from its own
  // stream ("init/<param name>", seeded by seeds.init). Initial values are drawn on the host and
  // uploaded, so every backend starts from the same bits.
  Model(const spec::ResolvedModel& resolved, ModelSeeds seeds, Memory& memory = host_memory());

  Memory& memory() const noexcept { return *memory_; }

  const spec::ResolvedModel& resolved() const noexcept { return resolved_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const noexcept { return layers_; }

  // Parameters in layer order (weight before bias). Pointers stay valid for the model's life.
  const std::vector<Param*>& params() const noexcept { return params_; }
  // Buffers (Layer::buffers) in layer order. Pointers stay valid for the model's life.
  const std::vector<NamedBuffer*>& buffers() const noexcept { return buffers_; }

  // Runs every layer; returns the output [N, classes]. `input` must outlive backward().
  const Tensor& forward(backend::Ops& ops, const Tensor& input, const StepContext& ctx);
  // From the gradient of the loss w.r.t. the output, overwrites every parameter's gradient.
  void backward(backend::Ops& ops, const Tensor& output_grad, const StepContext& ctx);

 private:
  spec::ResolvedModel resolved_;
  Memory* memory_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Param*> params_;
  std::vector<NamedBuffer*> buffers_;
  const Tensor* input_ = nullptr;
  std::vector<Tensor>
      outputs_;  // outputs_[i] = output of layer i (unused for a passed-through reshape)
  std::vector<const Tensor*> inputs_;  // inputs_[i] = what layer i read in the last forward pass
  std::vector<bool>
      passed_through_;  // reshape layers (not last) the Model skips: Layer::is_reshape
  // Whether layer i is a max-pool that the conv before it computes in its own forward and backward
  // (one backend call, Ops::conv2d_forward_maxpool / conv2d_backward_maxpool): the layers say they
  // can (Layer::conv_before_pool, pool_after_conv), the backend whether it pays off for the pass's
  // geometries (Ops::fuses_conv_maxpool; on the CPU the conv output then never reaches memory,
  // which saves writing and reading back 128 x 64 x 24 x 24 floats, 18.9 MB, per step in the Keras
  // MNIST convnet).
  bool pools_with_conv(backend::Ops& ops, std::size_t i, int batch);
  // pools_with_conv of each layer in the last forward pass; backward makes the same calls.
  std::vector<bool> pooled_by_previous_;
  // Whether layer i is an activation that the batch normalisation before it computes in its own
  // forward call (runs_with_previous).
  std::vector<bool> activated_with_previous_;
  // "conv2d_0+maxpool2d_0" (or "batchnorm_0+relu_0"): the name a pair computed in one call is
  // announced under
  // (Ops::enter_layer), by the conv's index; made once, so that steps allocate nothing.
  std::vector<std::string> pair_names_;
  std::vector<Tensor> grads_;  // grads_[i] = gradient w.r.t. the input of layer i (scratch)
};

}  // namespace ra::nn
