#pragma once
// The "model" section of a spec: input shape and layers (internal to lib/spec; see parse.h).
#include "spec/json_reader.h"
#include "spec/spec.h"

namespace ra::spec::detail {

struct ParsedModel {
  ModelSpec model;  // layers named (defaults filled) when every layer's type could be read
  // input and every layer field read without a problem (unknown keys aside): shapes can be
  // resolved and their problems reported with the others.
  bool complete = false;
};

// Reads `value` (the "model" object, at path "model"), recording problems.
ParsedModel parse_model(const Json& value, Problems& problems);

}  // namespace ra::spec::detail
