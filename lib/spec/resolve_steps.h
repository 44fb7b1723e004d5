#pragma once
// The steps of resolve_model, for parse_spec to run them on a model it is still validating and
// collect their problems with the rest of the document's (internal to lib/spec).
#include <optional>
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

}  // namespace ra::spec::detail
