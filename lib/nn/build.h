#pragma once
// One layer of a model built from its resolved spec (the Model's layers, and the layers a
// residual block holds), with its parameters initialised.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "nn/layer.h"
#include "spec/resolve.h"

namespace ra::nn {

// Seeds of the model's random streams; each may differ from the others so that an audit can vary
// one source of randomness and pin the rest.
struct ModelSeeds {
  std::uint64_t init = 0;
  std::uint64_t dropout = 0;
};

// The layer of `info` in `memory`, each parameter initialised from its own stream
// ("init/<param name>", seeded by seeds.init) with the spec's initializer, unless the layer
// initialises its own (Layer::initializes_own_params). Initial values are drawn on the host and
// uploaded, so every backend starts from the same bits.
std::unique_ptr<Layer> build_initialized_layer(const spec::ResolvedLayer& info,
                                               const ModelSeeds& seeds, Memory& memory);

// Pairs each layer whose relu backward the layer after it can apply
// (Layer::can_take_over_relu_backward) with that layer, in a chain of layers run in order (the
// Model's, a residual block's body): the same bits, one memory-bound pass less per pair.
void hand_over_relu_backwards(const std::vector<std::unique_ptr<Layer>>& chain);

// For each layer of a chain, whether the layer before it computes it in its own forward call (a
// batch normalisation and the activation layer after it: Layer::as_batchnorm).
std::vector<bool> runs_with_previous(const std::vector<std::unique_ptr<Layer>>& chain);
// Runs layer i of a chain forward, from x into outputs[i], or, where the next layer runs with it
// (with_previous[i + 1]), the pair, into outputs[i] and outputs[i + 1]; names the call's layer (or
// pair: pair_names[i], "batchnorm_0+relu_0") to the backend first. Nothing where with_previous[i].
void forward_in_chain(backend::Ops& ops, const std::vector<std::unique_ptr<Layer>>& chain,
                      std::size_t i, const std::vector<bool>& with_previous,
                      const std::vector<std::string>& pair_names, const Tensor& x,
                      std::vector<Tensor>& outputs, const StepContext& ctx);

}  // namespace ra::nn
