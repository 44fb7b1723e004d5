#include "spec/parse_model.h"

#include <limits>

#include "spec/limits.h"
#include "spec/resolve_steps.h"

namespace ra::spec::detail {
namespace {

constexpr IntRange kWindowRange{1, kMaxWindow};  // kernel, pool, stride
constexpr IntRange kDimensionRange{1, kMaxDimension};

const std::vector<Activation> kActivations{Activation::none, Activation::relu, Activation::tanh,
                                           Activation::sigmoid};
const std::vector<Initializer> kInitializers{Initializer::glorot_uniform, Initializer::he_normal,
                                             Initializer::zeros};
const std::vector<Padding> kPaddings{Padding::valid, Padding::same};

// "type" values: the nine layer types, then the activation shorthands ({"type": "relu"} is
// {"type": "activation", "activation": "relu"}).
const std::vector<std::string> kTypeNames{"conv2d",   "maxpool2d",  "dense",     "flatten",
                                          "dropout",  "activation", "batchnorm", "global_avgpool",
                                          "residual", "relu",       "tanh",      "sigmoid"};
constexpr std::size_t kFirstShorthand = 9;

std::vector<std::string> allowed_keys(LayerType type, bool shorthand) {
  switch (type) {
    case LayerType::conv2d:
      return {"type",
              "name",
              "filters",
              "kernel",
              "stride",
              "padding",
              "activation",
              "use_bias",
              "kernel_initializer",
              "bias_initializer"};
    case LayerType::maxpool2d:
      return {"type", "name", "pool", "stride", "padding"};
    case LayerType::dense:
      return {"type",
              "name",
              "units",
              "activation",
              "use_bias",
              "kernel_initializer",
              "bias_initializer"};
    case LayerType::dropout:
      return {"type", "name", "rate"};
    case LayerType::activation:
      if (shorthand) return {"type", "name"};
      return {"type", "name", "activation"};
    case LayerType::batchnorm:
      return {"type", "name", "momentum", "epsilon"};
    case LayerType::residual:
      return {"type", "name", "layers", "shortcut", "activation"};
    case LayerType::flatten:
    case LayerType::global_avgpool:
      return {"type", "name"};
  }
  return {};
}

// kernel / stride / pool: n (square) or [h, w].
bool read_pair(ObjectReader& r, std::string_view key, int& h, int& w) {
  const Json* v = r.find(key);
  if (v == nullptr) return false;
  const std::string path = r.path_of(key);
  if (v->is_array()) {
    if (v->size() != 2) {
      r.problems().push_back(
          {path, "expected a positive integer or [height, width], got " + describe(*v)});
      return false;
    }
    auto vh = read_integer((*v)[0], index_path(path, 0), kWindowRange, r.problems());
    auto vw = read_integer((*v)[1], index_path(path, 1), kWindowRange, r.problems());
    if (!vh || !vw) return false;
    h = static_cast<int>(*vh);
    w = static_cast<int>(*vw);
    return true;
  }
  if (!v->is_number()) {
    r.problems().push_back(
        {path, "expected a positive integer or [height, width], got " + describe(*v)});
    return false;
  }
  auto n = read_integer(*v, path, kWindowRange, r.problems());
  if (!n) return false;
  h = w = static_cast<int>(*n);
  return true;
}

constexpr const char* kPairExpected = "a positive integer or [height, width]";

// The fields shared by conv2d and dense: bias, fused activation and initializers.
void read_weighted_options(ObjectReader& r, LayerSpec& l) {
  r.boolean("use_bias", l.use_bias);
  r.choice("activation", l.activation, kActivations);
  r.choice("kernel_initializer", l.kernel_initializer, kInitializers);
  r.choice("bias_initializer", l.bias_initializer, kInitializers);
}

// What parse_layer could read: the type (needed to name the layers) and every field (needed to
// resolve shapes; unknown keys alone do not stop that).
struct LayerStatus {
  bool typed = false;
  bool fields_ok = false;
};

LayerSpec parse_layer(const Json& value, const std::string& path, Problems& problems,
                      LayerStatus& status);

// A residual block's "layers" (each parsed as a model's layer, given its default name here;
// resolve_model judges the names) and "shortcut" ({"filters", "stride", "use_bias", and the
// initializers}: the projection's, kept in the block's own fields).
bool read_residual(ObjectReader& r, LayerSpec& l) {
  bool ok = true;
  if (const Json* layers = r.require("layers", "a non-empty array of layers")) {
    if (!layers->is_array() || layers->empty() ||
        layers->size() > static_cast<std::size_t>(kMaxLayers)) {
      r.problems().push_back({r.path_of("layers"), "expected a non-empty array of at most " +
                                                       std::to_string(kMaxLayers) +
                                                       " layers, got " + describe(*layers)});
      return false;
    }
    for (std::size_t j = 0; j < layers->size(); ++j) {
      LayerStatus status;
      l.body.push_back(
          parse_layer((*layers)[j], index_path(r.path_of("layers"), j), r.problems(), status));
      ok = ok && status.typed && status.fields_ok;
    }
    Problems judged_later;
    if (ok) name_layers(l.body, judged_later);
  }
  r.choice("activation", l.activation, kActivations);
  const Json* shortcut = r.find("shortcut");
  if (shortcut == nullptr) return ok;
  ObjectReader s(*shortcut, r.path_of("shortcut"), r.problems());
  if (!s.is_object()) return false;
  s.report_unknown_keys({"filters", "stride", "use_bias", "kernel_initializer", "bias_initializer"},
                        "shortcuts");
  if (s.require("filters", "a positive integer")) {
    s.integer("filters", l.filters, IntRange{1, kMaxFilters});
  }
  read_pair(s, "stride", l.stride_h, l.stride_w);
  s.boolean("use_bias", l.use_bias);
  s.choice("kernel_initializer", l.kernel_initializer, kInitializers);
  s.choice("bias_initializer", l.bias_initializer, kInitializers);
  return ok;
}

LayerSpec parse_layer(const Json& value, const std::string& path, Problems& problems,
                      LayerStatus& status) {
  LayerSpec l;
  status = {};
  ObjectReader r(value, path, problems);
  if (!r.is_object()) return l;
  const Json* type_value = r.require("type",
                                     "one of conv2d, maxpool2d, dense, flatten, dropout, "
                                     "activation, batchnorm, global_avgpool, residual, relu, tanh, "
                                     "sigmoid");
  if (type_value == nullptr) return l;
  const auto type_index = read_choice(*type_value, r.path_of("type"), kTypeNames, problems);
  if (!type_index) return l;  // the other keys cannot be judged without the type
  status.typed = true;
  const bool shorthand = *type_index >= kFirstShorthand;
  l.type = shorthand ? LayerType::activation : static_cast<LayerType>(*type_index);
  if (shorthand) l.activation = kActivations[*type_index - kFirstShorthand + 1];
  r.report_unknown_keys(allowed_keys(l.type, shorthand), kTypeNames[*type_index] + " layers");
  const std::size_t before_fields = problems.size();

  if (r.string("name", l.name) && l.name.empty()) {
    problems.push_back({r.path_of("name"), "expected a non-empty name ([A-Za-z0-9_]+), got \"\""});
  }
  switch (l.type) {
    case LayerType::conv2d:
      if (r.require("filters", "a positive integer"))
        r.integer("filters", l.filters, IntRange{1, kMaxFilters});
      if (r.require("kernel", kPairExpected)) read_pair(r, "kernel", l.kernel_h, l.kernel_w);
      read_pair(r, "stride", l.stride_h, l.stride_w);
      r.choice("padding", l.padding, kPaddings);
      read_weighted_options(r, l);
      break;
    case LayerType::maxpool2d:
      if (r.require("pool", kPairExpected)) read_pair(r, "pool", l.pool_h, l.pool_w);
      // Keras and PyTorch: the stride of a pooling layer defaults to its pool size.
      l.stride_h = l.pool_h;
      l.stride_w = l.pool_w;
      read_pair(r, "stride", l.stride_h, l.stride_w);
      r.choice("padding", l.padding, kPaddings);
      break;
    case LayerType::dense:
      if (r.require("units", "a positive integer"))
        r.integer("units", l.units, IntRange{1, kMaxUnits});
      read_weighted_options(r, l);
      break;
    case LayerType::dropout:
      if (r.require("rate", kUnitInterval.describe())) r.real("rate", l.rate, kUnitInterval);
      break;
    case LayerType::activation:
      if (!shorthand &&
          r.require("activation", "one of \"none\", \"relu\", \"tanh\", \"sigmoid\"")) {
        r.choice("activation", l.activation, kActivations);
      }
      break;
    case LayerType::batchnorm:
      r.real("momentum", l.momentum, RealRange{0.0, false, 1.0, false});
      r.real("epsilon", l.epsilon, kPositive);
      break;
    case LayerType::residual:
      if (!read_residual(r, l)) status.typed = false;
      break;
    case LayerType::flatten:
    case LayerType::global_avgpool:
      break;
  }
  status.fields_ok = problems.size() == before_fields;
  return l;
}

// model.input: [C, H, W] of positive integers.
std::optional<Shape> read_input_shape(const Json& v, const std::string& path, Problems& problems) {
  if (!v.is_array() || v.size() != 3) {
    problems.push_back({path, "expected [C, H, W] of positive integers, got " + describe(v)});
    return std::nullopt;
  }
  Shape shape;
  for (std::size_t i = 0; i < 3; ++i) {
    auto d = read_integer(v[i], index_path(path, i), kDimensionRange, problems);
    if (!d) return std::nullopt;
    shape.push_back(*d);
  }
  return shape;
}

}  // namespace

ParsedModel parse_model(const Json& value, Problems& problems) {
  ParsedModel parsed;
  ObjectReader r(value, "model", problems);
  if (!r.is_object()) return parsed;
  r.report_unknown_keys({"input", "layers"}, "models");

  bool input_ok = false;
  if (const Json* input = r.require("input", "[C, H, W] of positive integers")) {
    if (auto shape = read_input_shape(*input, r.path_of("input"), problems)) {
      parsed.model.input = *shape;
      input_ok = true;
    }
  }
  bool all_typed = false, all_fields_ok = false;
  if (const Json* layers = r.require("layers", "a non-empty array of layers")) {
    if (!layers->is_array() || layers->empty()) {
      problems.push_back(
          {r.path_of("layers"), "expected a non-empty array of layers, got " + describe(*layers)});
    } else if (layers->size() > static_cast<std::size_t>(kMaxLayers)) {
      problems.push_back({r.path_of("layers"), "expected at most " + std::to_string(kMaxLayers) +
                                                   " layers, got " +
                                                   std::to_string(layers->size())});
    } else {
      all_typed = all_fields_ok = true;
      for (std::size_t i = 0; i < layers->size(); ++i) {
        LayerStatus status;
        parsed.model.layers.push_back(
            parse_layer((*layers)[i], index_path(r.path_of("layers"), i), problems, status));
        all_typed = all_typed && status.typed;
        all_fields_ok = all_fields_ok && status.fields_ok;
      }
    }
  }
  parsed.complete = input_ok && all_fields_ok;
  // Names are judged once every layer's type is known (default names count layers by type);
  // a bad name does not keep the shapes from being resolved.
  if (all_typed) name_layers(parsed.model.layers, problems);
  return parsed;
}

}  // namespace ra::spec::detail
