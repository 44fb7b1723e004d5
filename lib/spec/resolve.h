#pragma once
// The model of a spec resolved layer by layer: per-sample shapes, "same" padding, parameter and
// FLOP counts (rules in docs/spec.md, "Shapes, parameters and FLOPs").
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "spec/spec.h"

namespace ra::spec {

struct ResolvedLayer {
  LayerSpec spec;       // copy, name filled in
  Shape input, output;  // per-sample shapes: [C,H,W] or [features]
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // conv2d / maxpool2d
  std::int64_t params = 0;                                       // weights + biases
  std::int64_t flops = 0;  // forward FLOPs per sample (see docs/spec.md for the counting rule)
  // residual: the body's layers and the projection (none, or one conv2d "<block>.shortcut"),
  // their names prefixed with "<block>.".
  std::vector<ResolvedLayer> body, shortcut;
};

struct ResolvedModel {
  Shape input, output;
  std::vector<ResolvedLayer> layers;
  std::int64_t params = 0, flops = 0;  // totals
};

// Computes shapes layer by layer. Impossible shapes throw ra::ValidationError with paths
// "model.layers[i]" (kernel or pool larger than the (padded) input, dense on an unflattened
// [C,H,W] input ("add a flatten layer"), conv2d/maxpool2d on a flat input, ...). Out-of-range
// layer fields (filters <= 0, ...) and bad or duplicate names are reported too, so a ModelSpec
// built in code is checked as strictly as one parsed from JSON.
ResolvedModel resolve_model(const ModelSpec& model);

}  // namespace ra::spec
