// --inject-fault read and checked before any run (record/fault_check.h).
#include "record/fault_check.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/printable.h"
#include "spec/resolve.h"
#include "train/trainer.h"

namespace ra::record {
namespace {

// A whole decimal number in [min, max]: "3x", "", "-1" for a count, or 2^64 are refused rather
// than read as a prefix or wrapped.
template <class Int>
Int parse_number(const std::string& key, const std::string& value, Int min, Int max) {
  Int n{};
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (value.empty() || ec != std::errc{} || ptr != end || n < min || n > max) {
    throw InputError("--inject-fault: " + key + " must be an integer in " + std::to_string(min) +
                     ".." + std::to_string(max) + ", got '" + printable(value) + "'");
  }
  return n;
}

// The parameters of the model with their element counts, in model order (nn/layers.cpp).
struct ParamInfo {
  std::string name;
  std::int64_t elements;
};
// A residual block's are its body's and its projection's; a batchnorm's weight and bias have
// one element per channel each.
void add_parameters_of(const spec::ResolvedLayer& l, std::vector<ParamInfo>& params) {
  if (l.spec.type == spec::LayerType::residual) {
    for (const spec::ResolvedLayer& inner : l.body) add_parameters_of(inner, params);
    for (const spec::ResolvedLayer& inner : l.shortcut) add_parameters_of(inner, params);
    return;
  }
  if (l.params == 0) return;
  const std::int64_t bias = l.spec.type == spec::LayerType::batchnorm ? l.params / 2
                            : !l.spec.use_bias                        ? 0
                            : l.spec.type == spec::LayerType::conv2d  ? l.spec.filters
                                                                      : l.spec.units;
  params.push_back({l.spec.name + ".weight", l.params - bias});
  if (bias > 0) params.push_back({l.spec.name + ".bias", bias});
}

std::vector<ParamInfo> parameters_of(const spec::ResolvedModel& model) {
  std::vector<ParamInfo> params;
  for (const spec::ResolvedLayer& l : model.layers) add_parameters_of(l, params);
  return params;
}

}  // namespace

FaultSpec parse_fault(const std::string& text) {
  constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int64_t>::max();
  FaultSpec f;
  bool has_tensor = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw InputError("--inject-fault: '" + printable(item) + "' is not key=value");
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "run") {
      f.run = parse_number<int>(key, value, 0, 1 << 20);
    } else if (key == "step") {
      f.step = parse_number<std::int64_t>(key, value, 0, kMaxIndex);
    } else if (key == "element") {
      f.element = parse_number<std::int64_t>(key, value, 0, kMaxIndex);
    } else if (key == "bit") {
      f.bit = parse_number<int>(key, value, 0, 31);
    } else if (key == "tensor") {
      f.tensor = value;
      has_tensor = true;
    } else if (key == "op") {
      if (value.find('/') == std::string::npos) {
        throw InputError("--inject-fault: op must be LAYER/OP (dense_0/dense.forward), got '" +
                         printable(value) + "'");
      }
      f.op = value;
    } else {
      throw InputError("--inject-fault: unknown key '" + printable(key) +
                       "' (run, step, tensor, op, element, bit)");
    }
  }
  if (has_tensor == !f.op.empty()) {
    throw InputError(
        "--inject-fault needs either tensor=<parameter name or batch> or op=<LAYER/OP>");
  }
  return f;
}

void validate_fault(const FaultSpec& fault, const spec::ExperimentSpec& spec,
                    const data::Dataset& train) {
  const std::int64_t steps = train::planned_steps(spec, train);
  if (fault.step < 0 || fault.step >= steps) {
    throw InputError("--inject-fault: step " + std::to_string(fault.step) +
                     " never runs: each run has " + std::to_string(steps) + " steps (0.." +
                     std::to_string(steps - 1) + ")");
  }
  if (!fault.op.empty()) {
    // The layer here; the op name and the element when the op runs (record/op_recorder.h).
    const std::string layer = fault.op.substr(0, fault.op.find('/'));
    const spec::ResolvedModel model = spec::resolve_model(spec.model);
    std::string names = "loss";
    for (const spec::ResolvedLayer& l : model.layers) {
      if (l.spec.name == layer) return;
      names += ", " + l.spec.name;
    }
    for (const ParamInfo& p : parameters_of(model)) {
      if (p.name == layer) return;  // the layer of an optimizer.update is its parameter
    }
    if (layer == "loss") return;
    throw InputError("--inject-fault: the model has no layer '" + printable(layer) + "' (" + names +
                     ", or a parameter name for optimizer.update)");
  }
  if (fault.tensor == "batch") {
    // Batch k of an epoch holds min(B, n - k * B) samples (data/loader.h).
    const std::int64_t per_epoch = train::batches_per_epoch(spec, train);
    const std::int64_t index = fault.step % per_epoch;
    const std::int64_t size =
        std::min<std::int64_t>(spec.data.batch_size, train.size() - index * spec.data.batch_size);
    if (size < 2) {
      throw InputError("--inject-fault: tensor=batch swaps two samples, but the batch of step " +
                       std::to_string(fault.step) + " holds " + std::to_string(size));
    }
    return;
  }
  const std::vector<ParamInfo> params = parameters_of(spec::resolve_model(spec.model));
  std::string names;
  for (const ParamInfo& p : params) {
    if (p.name == fault.tensor) {
      if (fault.element >= p.elements) {
        throw InputError("--inject-fault: element " + std::to_string(fault.element) +
                         " is outside " + p.name + " (" + std::to_string(p.elements) +
                         " elements, 0.." + std::to_string(p.elements - 1) + ")");
      }
      return;
    }
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw InputError("--inject-fault: the model has no tensor '" + printable(fault.tensor) +
                   "' (batch, " + names + ")");
}

}  // namespace ra::record
