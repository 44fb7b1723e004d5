// Canonical JSON of a resolved spec (see parse.h): the same keys for every spec of a kind, all
// values resolved, so that equal specs give byte-equal dumps.
#include <charconv>
#include <cstdlib>
#include <string>

#include "spec/parse.h"

namespace ra::spec {
namespace {

using Json = nlohmann::json;

// A float field written as the shortest decimal that reads back as the same float ("0.003921569"
// for scale 1/255, not its double expansion 0.0039215688593685627). JSON numbers are read as
// double and then rounded to float; the double nearest the shortest decimal is checked to round
// back to `f`, and the exact double value of `f` is written in the (rare) case it would not.
Json float_json(float f) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), f);
  if (result.ec == std::errc{}) {
    *result.ptr = '\0';
    const double shortest = std::strtod(text, nullptr);
    if (static_cast<float>(shortest) == f) return shortest;
  }
  return static_cast<double>(f);
}

Json pair_json(int h, int w) {
  return Json::array({h, w});
}

Json dataset_json(const DatasetSpec& d) {
  Json j{{"format", to_string(d.format)}, {"limit", d.limit}};
  switch (d.format) {
    case DataFormat::idx:
      j["images"] = d.images;
      j["labels"] = d.labels;
      break;
    case DataFormat::npy:
      j["images"] = d.images;
      j["labels"] = d.labels;
      j["layout"] = to_string(d.layout);
      break;
    case DataFormat::cifar10:
      j["files"] = d.files;
      break;
    case DataFormat::random:
      j["samples"] = d.samples;
      j["shape"] = d.shape;
      j["classes"] = d.classes;
      j["seed"] = d.seed;
      break;
    case DataFormat::constant:
      j["samples"] = d.samples;
      j["shape"] = d.shape;
      j["classes"] = d.classes;
      j["value"] = float_json(d.value);
      break;
  }
  return j;
}

Json data_json(const DataSpec& d) {
  Json j{{"train", dataset_json(d.train)}, {"scale", float_json(d.scale)},
         {"batch_size", d.batch_size},     {"shuffle", d.shuffle},
         {"drop_last", d.drop_last},       {"workers", d.workers}};
  // An absent eval set stays absent: null is not a data set in the input format.
  if (d.eval) j["eval"] = dataset_json(*d.eval);
  // Absent unless it augments, so that the canonical JSON (and digest) of every other spec stays.
  if (d.augment.active()) {
    Json& a = j["augment"] = Json{{"shift", d.augment.shift}, {"flip", d.augment.flip}};
    // The Keras-style keys only when they are not their defaults: the canonical form (and the
    // digest) of the specs written before them stays.
    if (d.augment.width_shift_range > 0.0f) {
      a["width_shift_range"] = float_json(d.augment.width_shift_range);
    }
    if (d.augment.height_shift_range > 0.0f) {
      a["height_shift_range"] = float_json(d.augment.height_shift_range);
    }
    if (d.augment.fill_mode != FillMode::constant) a["fill_mode"] = to_string(d.augment.fill_mode);
  }
  return j;
}

void weighted_options(const LayerSpec& l, Json& j) {
  j["use_bias"] = l.use_bias;
  j["activation"] = to_string(l.activation);
  j["kernel_initializer"] = to_string(l.kernel_initializer);
  j["bias_initializer"] = to_string(l.bias_initializer);
}

// Every layer in its long form: shorthand types ("relu") become activation layers, kernels,
// strides and pools become [h, w].
Json layer_json(const LayerSpec& l) {
  Json j{{"type", to_string(l.type)}, {"name", l.name}};
  switch (l.type) {
    case LayerType::conv2d:
      j["filters"] = l.filters;
      j["kernel"] = pair_json(l.kernel_h, l.kernel_w);
      j["stride"] = pair_json(l.stride_h, l.stride_w);
      j["padding"] = to_string(l.padding);
      weighted_options(l, j);
      break;
    case LayerType::maxpool2d:
      j["pool"] = pair_json(l.pool_h, l.pool_w);
      j["stride"] = pair_json(l.stride_h, l.stride_w);
      j["padding"] = to_string(l.padding);
      break;
    case LayerType::dense:
      j["units"] = l.units;
      weighted_options(l, j);
      break;
    case LayerType::dropout:
      j["rate"] = float_json(l.rate);
      break;
    case LayerType::activation:
      j["activation"] = to_string(l.activation);
      break;
    case LayerType::batchnorm:
      j["momentum"] = float_json(l.momentum);
      j["epsilon"] = float_json(l.epsilon);
      break;
    case LayerType::residual: {
      Json body = Json::array();
      for (const LayerSpec& inner : l.body) body.push_back(layer_json(inner));
      j["layers"] = body;
      j["activation"] = to_string(l.activation);
      if (l.filters > 0) {
        Json shortcut{{"filters", l.filters},
                      {"stride", pair_json(l.stride_h, l.stride_w)},
                      {"use_bias", l.use_bias}};
        shortcut["kernel_initializer"] = to_string(l.kernel_initializer);
        shortcut["bias_initializer"] = to_string(l.bias_initializer);
        j["shortcut"] = shortcut;
      }
      break;
    }
    case LayerType::flatten:
    case LayerType::global_avgpool:
      break;
  }
  return j;
}

Json optimizer_json(const OptimizerSpec& o) {
  Json j{{"type", to_string(o.type)},
         {"lr", o.lr},
         {"decay", o.decay},
         {"weight_decay", o.weight_decay}};
  switch (o.type) {
    case OptimizerType::sgd:
      j["momentum"] = o.momentum;
      j["dampening"] = o.dampening;
      j["nesterov"] = o.nesterov;
      break;
    case OptimizerType::adam:
      j["beta1"] = o.beta1;
      j["beta2"] = o.beta2;
      j["eps"] = o.eps;
      break;
    case OptimizerType::rmsprop:
    case OptimizerType::adadelta:
      j["rho"] = o.rho;
      j["eps"] = o.eps;
      break;
  }
  return j;
}

Json determinism_json(const DeterminismSpec& d) {
  Json ops = Json::object();
  for (const auto& [op, mode] : d.ops) ops[to_string(op)] = to_string(mode);
  return Json{{"mode", to_string(d.mode)}, {"ops", ops}};
}

}  // namespace

nlohmann::json to_json(const ExperimentSpec& s) {
  Json layers = Json::array();
  for (const LayerSpec& l : s.model.layers) layers.push_back(layer_json(l));
  return Json{{"name", s.name},
              {"seed", s.seed},
              {"device", to_string(s.device)},
              {"threads", s.threads},
              {"data", data_json(s.data)},
              {"model", {{"input", s.model.input}, {"layers", layers}}},
              {"loss", to_string(s.loss)},
              {"optimizer", optimizer_json(s.optimizer)},
              {"train", {{"epochs", s.train.epochs}, {"max_steps", s.train.max_steps}}},
              {"determinism", determinism_json(s.determinism)}};
}

}  // namespace ra::spec
