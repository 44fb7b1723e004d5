// Pins of convolution algorithms for runs and replays (audit/pinned_algorithms.h).
#include "audit/pinned_algorithms.h"

#include <utility>

#include "backend/geometry_key.h"
#include "core/error.h"
#include "nn/layers.h"
#include "spec/resolve.h"

namespace ra::audit {
namespace {

backend::AlgorithmPins conv_pins(const nlohmann::json& entries, const std::string& source) {
  backend::AlgorithmPins pins;
  pins.source = source;
  for (const nlohmann::json& e : entries) {
    if (!rundir::is_convolution_entry(e)) continue;
    pins.pins.push_back({e.value("layer", ""), e.value("direction", ""), e.value("algorithm", "")});
  }
  return pins;
}

// Why runs of `spec` train on the CPU here ("" when on the GPU): the spec says so, or no GPU is
// usable and the spec lets auto fall back. RuntimeFailure when the spec demands the GPU and none
// is usable (exit 3, as the run itself would).
std::string trains_on_cpu(const spec::ExperimentSpec& spec, const nlohmann::json& gpu) {
  if (spec.device == spec::Device::cpu) return "the runs train on the CPU (device cpu)";
  if (gpu.value("available", false)) return "";
  const std::string reason = gpu.value("reason", std::string("no GPU is usable"));
  if (spec.device == spec::Device::cuda) {
    throw RuntimeFailure("device 'cuda' was asked for, but no GPU is usable: " + reason);
  }
  return "the runs would train on the CPU (device auto: " + reason + ")";
}

}  // namespace

backend::AlgorithmPins pins_of(const rundir::AlgorithmFile& file, const std::string& source) {
  backend::AlgorithmPins pins = conv_pins(file.algorithms, source);
  pins.chosen_by = "pinned-file";
  pins.complete = true;
  return pins;
}

backend::AlgorithmPins ledger_pins(const nlohmann::json& ledger, const std::string& source) {
  backend::AlgorithmPins pins =
      conv_pins(ledger.is_array() ? ledger : nlohmann::json::array(), source);
  pins.chosen_by = "pinned-ledger";
  pins.complete = false;
  return pins;
}

backend::AlgorithmPins pins_for_run(const std::filesystem::path& file,
                                    const spec::ExperimentSpec& spec, const nlohmann::json& gpu) {
  const std::string source = file.string();
  if (const std::string cpu = trains_on_cpu(spec, gpu); !cpu.empty()) {
    throw InputError("--pin-algorithms " + source + ": " + cpu +
                     ", which has one algorithm per op and instruction set: nothing to pin");
  }
  const rundir::AlgorithmFile loaded = rundir::read_algorithm_file(file);
  const std::vector<std::string> mismatches = rundir::gpu_mismatches(loaded, gpu);
  if (!mismatches.empty()) {
    std::string list;
    for (const std::string& m : mismatches) list += "\n  " + m;
    throw InputError("--pin-algorithms " + source +
                     ": made on another GPU or library version; cuDNN's algorithms may not exist "
                     "or not compute the same here:" +
                     list + "\n(tune on this machine: run --mode autotune --save-algorithms FILE)");
  }
  backend::AlgorithmPins pins = pins_of(loaded, source);
  const std::vector<std::string> missing = uncovered_convolutions(pins, spec);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += "\n  " + m;
    throw InputError("--pin-algorithms " + source + " pins no algorithm for " +
                     std::to_string(missing.size()) + " convolution(s) of " + spec.name + ":" +
                     list + "\n(save the algorithms of a run of this spec: --save-algorithms)");
  }
  return pins;
}

void check_algorithms_can_be_saved(const spec::ExperimentSpec& spec, const nlohmann::json& gpu) {
  if (const std::string cpu = trains_on_cpu(spec, gpu); !cpu.empty()) {
    throw InputError("--save-algorithms: " + cpu +
                     ", which has one algorithm per op and instruction set: nothing to save");
  }
}

namespace {

// The convolutions of `layers` in model order, those inside residual blocks included, each with
// whether it reads the model's input (`first`): the model input's gradient is never computed
// (nn/model.cpp), so such a conv has no backward_data; in a first block, its body's first layer
// and its projection read the input.
void add_convolutions(const std::vector<spec::ResolvedLayer>& layers, bool first,
                      std::vector<std::pair<const spec::ResolvedLayer*, bool>>& out) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const spec::ResolvedLayer& layer = layers[i];
    const bool reads_input = first && i == 0;
    if (layer.spec.type == spec::LayerType::conv2d) out.emplace_back(&layer, reads_input);
    add_convolutions(layer.body, reads_input, out);
    add_convolutions(layer.shortcut, reads_input, out);
  }
}

}  // namespace

std::vector<std::string> uncovered_convolutions(const backend::AlgorithmPins& pins,
                                                const spec::ExperimentSpec& spec) {
  std::vector<std::string> out;
  const spec::ResolvedModel model = spec::resolve_model(spec.model);
  std::vector<std::pair<const spec::ResolvedLayer*, bool>> convolutions;
  add_convolutions(model.layers, true, convolutions);
  for (const auto& [layer, reads_input] : convolutions) {
    const std::string key =
        backend::conv_geometry_key(nn::conv_geometry(*layer, spec.data.batch_size));
    for (const char* direction : {"forward", "backward_data", "backward_filter"}) {
      if (reads_input && std::string(direction) == "backward_data") continue;
      if (pins.find(key, direction) == nullptr) out.push_back(key + " " + direction);
    }
  }
  return out;
}

}  // namespace ra::audit
