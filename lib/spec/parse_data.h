#pragma once
// The "data" section of a spec: the training and evaluation sets, batching and augmentation
// (internal to lib/spec; see parse.h).
#include <string>

#include "spec/json_reader.h"
#include "spec/spec.h"

namespace ra::spec::detail {

// Which sets were read without a problem (the checks against the model need them whole).
struct ParsedData {
  bool train_ok = false, eval_ok = false;
};

// Reads `value` (the "data" object, at path "data") into `data`, recording problems; relative
// file paths are resolved against `base_dir` and stored absolute.
ParsedData parse_data(const Json& value, const std::string& base_dir, DataSpec& data,
                      Problems& problems);

}  // namespace ra::spec::detail
