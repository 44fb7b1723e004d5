#pragma once
// Synthetic data sets (see dataset.h for the exact counter layout of the random set). Callers
// validate the spec first; these only generate.
#include <cstdint>
#include <string_view>

#include "data/dataset.h"

namespace ra::data {

// The first `count` samples of the random set of `spec` (shape, classes, seed), pixels * scale.
Dataset make_random_dataset(const spec::DatasetSpec& spec, std::int64_t count, float scale,
                            std::string_view role);

// `count` samples whose pixels all equal spec.value * scale; label of sample i = i % classes.
Dataset make_constant_dataset(const spec::DatasetSpec& spec, std::int64_t count, float scale,
                              std::string_view role);

}  // namespace ra::data
