#pragma once
// The level of detail of a trace (docs/trace-format.md, "Levels of detail"): at which steps a run
// records a digest per tensor (every gradient, weight and buffer), and so at which it records one
// digest per category instead. A run of a million steps and 160 parameters writes about 11 KB a
// step per tensor and about 0.4 KB per category; the per-tensor steps say which tensor parted.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/digest.h"
#include "trace/trace.h"

namespace ra::trace {

// The --tensor-digests values, each "all", "none", "every:K" (K >= 1) or a step window ("A:B",
// "A:", "N", as --trace-ops takes); the plan is their union, and no value at all is "all" (the
// options' default). InputError naming a malformed value.
TensorDigestPlan parse_tensor_digest_plan(const std::vector<std::string>& values);
// The same values back, joined by commas ("every:1000,5000:5100", "all", "none"): what the
// PyTorch recorder reads from REPRO_AUDIT_TENSOR_DIGESTS and what a re-run command repeats.
std::string to_string(const TensorDigestPlan& plan);
// The header's field: {"every": K or null, "windows": [{"first", "last"}...]}.
nlohmann::json to_json(const TensorDigestPlan& plan);

// One digest over a category's per-tensor digests, in header order: the digest of their hex texts
// joined by newlines, as u8 bytes (the PyTorch recorder's digest_of_digests). A step recorded per
// category holds it; a step recorded per tensor gives it by this function, so the two compare.
Digest128 category_digest(const std::vector<Digest128>& tensors);
// A step recorded per tensor made one recorded per category: its gradients', weights' and
// buffers' category digests kept, their lists dropped.
void keep_category_digests(StepRecord& r);

}  // namespace ra::trace
