#pragma once
// Helpers shared by the spec tests: a small valid document to break, the problems parse_spec
// reports for a document, and a field-by-field comparison of two ExperimentSpecs (written out
// here rather than through to_json, so the round-trip test does not check to_json with itself).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "spec/parse.h"

namespace ra::spec::test {

using nlohmann::json;

// Valid: random [1, 8, 8] data with 4 classes, conv -> flatten -> dense 4.
inline json small_doc() {
  return json::parse(R"({
    "data": {"train": {"format": "random", "samples": 64, "shape": [1, 8, 8], "classes": 4}},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"},
      {"type": "dense", "units": 4}]}})");
}

// The problems parse_spec reports for `doc` (fails the test when it reports none).
inline std::vector<Problem> problems_of(const json& doc, const std::string& base_dir = "/specs") {
  try {
    parse_spec(doc, base_dir);
  } catch (const ValidationError& e) {
    return e.problems();
  }
  FAIL("parse_spec accepted " << doc.dump());
  return {};
}

inline std::vector<std::string> paths_of(const std::vector<Problem>& problems) {
  std::vector<std::string> paths;
  for (const Problem& p : problems) paths.push_back(p.path);
  return paths;
}

// The message of the only problem of `doc`, which must be at `path`.
inline std::string only_problem(const json& doc, const std::string& path) {
  const auto problems = problems_of(doc);
  INFO("problems: " << ValidationError(problems).what());
  REQUIRE(problems.size() == 1);
  REQUIRE(problems[0].path == path);
  return problems[0].message;
}

inline bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

inline void require_same(const DatasetSpec& a, const DatasetSpec& b) {
  CHECK(a.format == b.format);
  CHECK(a.images == b.images);
  CHECK(a.labels == b.labels);
  CHECK(a.samples == b.samples);
  CHECK(a.shape == b.shape);
  CHECK(a.classes == b.classes);
  CHECK(same_bits(a.value, b.value));
  CHECK(a.seed == b.seed);
  CHECK(a.limit == b.limit);
  CHECK(a.layout == b.layout);
  CHECK(a.files == b.files);
}

inline void require_same(const LayerSpec& a, const LayerSpec& b) {
  INFO("layer " << a.name);
  CHECK(a.type == b.type);
  CHECK(a.name == b.name);
  CHECK(a.filters == b.filters);
  CHECK(a.kernel_h == b.kernel_h);
  CHECK(a.kernel_w == b.kernel_w);
  CHECK(a.stride_h == b.stride_h);
  CHECK(a.stride_w == b.stride_w);
  CHECK(a.padding == b.padding);
  CHECK(a.pool_h == b.pool_h);
  CHECK(a.pool_w == b.pool_w);
  CHECK(a.units == b.units);
  CHECK(a.use_bias == b.use_bias);
  CHECK(a.activation == b.activation);
  CHECK(a.kernel_initializer == b.kernel_initializer);
  CHECK(a.bias_initializer == b.bias_initializer);
  CHECK(same_bits(a.rate, b.rate));
}

inline void require_same(const ExperimentSpec& a, const ExperimentSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.seed == b.seed);
  CHECK(a.device == b.device);
  CHECK(a.threads == b.threads);
  CHECK(a.base_dir == b.base_dir);
  require_same(a.data.train, b.data.train);
  REQUIRE(a.data.eval.has_value() == b.data.eval.has_value());
  if (a.data.eval) require_same(*a.data.eval, *b.data.eval);
  CHECK(same_bits(a.data.scale, b.data.scale));
  CHECK(a.data.batch_size == b.data.batch_size);
  CHECK(a.data.shuffle == b.data.shuffle);
  CHECK(a.data.drop_last == b.data.drop_last);
  CHECK(a.data.workers == b.data.workers);
  CHECK(a.data.augment.shift == b.data.augment.shift);
  CHECK(a.data.augment.flip == b.data.augment.flip);
  CHECK(same_bits(a.data.augment.width_shift_range, b.data.augment.width_shift_range));
  CHECK(same_bits(a.data.augment.height_shift_range, b.data.augment.height_shift_range));
  CHECK(a.data.augment.fill_mode == b.data.augment.fill_mode);
  CHECK(a.model.input == b.model.input);
  REQUIRE(a.model.layers.size() == b.model.layers.size());
  for (std::size_t i = 0; i < a.model.layers.size(); ++i) {
    require_same(a.model.layers[i], b.model.layers[i]);
  }
  CHECK(a.loss == b.loss);
  const OptimizerSpec &oa = a.optimizer, &ob = b.optimizer;
  CHECK(oa.type == ob.type);
  CHECK(oa.lr == ob.lr);
  CHECK(oa.decay == ob.decay);
  CHECK(oa.weight_decay == ob.weight_decay);
  CHECK(oa.momentum == ob.momentum);
  CHECK(oa.dampening == ob.dampening);
  CHECK(oa.nesterov == ob.nesterov);
  CHECK(oa.beta1 == ob.beta1);
  CHECK(oa.beta2 == ob.beta2);
  CHECK(oa.rho == ob.rho);
  CHECK(oa.eps == ob.eps);
  CHECK(a.train.epochs == b.train.epochs);
  CHECK(a.train.max_steps == b.train.max_steps);
  CHECK(a.determinism.mode == b.determinism.mode);
  CHECK(a.determinism.ops == b.determinism.ops);
}

}  // namespace ra::spec::test
