#pragma once
// The steps of resolve_model, for parse_spec to run them on a model it is still validating and
// collect their problems with the rest of the document's (internal to lib/spec).
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "spec/resolve.h"

namespace ra::spec::detail {

// Gives every unnamed layer its default name "<type>_<i>" (i counts the layers of that type from
// 0) and reports names that are not [A-Za-z0-9_]+ or not unique, at model.layers[i].name.
void name_layers(std::vector<LayerSpec>& layers, std::vector<Problem>& problems);

// Shapes, pads, parameters and FLOPs of a model whose layers are named. Returns nullopt after
// recording the problems when the model cannot be built.
std::optional<ResolvedModel> resolve_shapes(const ModelSpec& model, std::vector<Problem>& problems);

// A residual block at `path` (resolve_residual.cpp): its body resolved as a model of its own on
// the block's input (problems at "<path>.layers[j]"), its projection, their shapes compared; sets
// r.output, r.params, r.flops (body, projection, the add and the activation), r.body and
// r.shortcut. False after recording the problems.
bool resolve_residual(ResolvedLayer& r, const std::string& path, std::vector<Problem>& problems);

}  // namespace ra::spec::detail
