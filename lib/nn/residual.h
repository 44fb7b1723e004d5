#pragma once
// A residual block (spec type "residual", docs/spec.md): y = act(body(x) + shortcut(x)). The body
// is a chain of layers run in order; the shortcut is the identity, or a 1x1 strided projection (a
// conv2d layer named "<block>.shortcut") where the body changes the shape. The pre-activation
// ResNet v2 puts batchnorm and relu at the head of the body and nothing after the add; v1 puts a
// relu after the add (the block's activation). The adds are Ops::residual_add: the output, and
// the input gradient (the body's plus the shortcut's).
#include <memory>
#include <string>
#include <vector>

#include "nn/build.h"
#include "nn/layer.h"

namespace ra::nn {

class ResidualLayer final : public Layer {
 public:
  // Builds the body and the projection from info.body and info.shortcut, each layer initialised
  // from its own streams, as the Model initialises its layers (build.h).
  ResidualLayer(const spec::ResolvedLayer& info, const ModelSeeds& seeds, Memory& memory);
  void forward(backend::Ops& ops, const Tensor& x, Tensor& y, const StepContext& ctx) override;
  void backward(backend::Ops& ops, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx,
                const StepContext& ctx) override;
  // The body's, in order, then the projection's.
  std::vector<Param*> params() override;
  std::vector<NamedBuffer*> buffers() override;
  bool initializes_own_params() const override { return true; }

 private:
  std::vector<std::unique_ptr<Layer>> body_;
  std::unique_ptr<Layer> projection_;  // null: the identity shortcut
  std::vector<Tensor> body_outputs_, body_grads_;
  // The body's pairs computed in one call (runs_with_previous) and the names they are announced
  // under.
  std::vector<bool> body_with_previous_;
  std::vector<std::string> body_pair_names_;
  // "block.batchnorm_0+block": the name the body's first layer and the block's add are announced
  // under when they run as one call (a body that starts with a batch normalisation, and an
  // identity shortcut: Ops::batchnorm_backward_add).
  std::string head_add_name_;
  Tensor projection_output_{Shape{0}, memory()}, projection_grad_{Shape{0}, memory()};
  Tensor sum_grad_{Shape{0}, memory()};  // the gradient of the add's output, before act
};

}  // namespace ra::nn
