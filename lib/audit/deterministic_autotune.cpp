#include "audit/deterministic_autotune.h"

#include "audit/pinned_algorithms.h"
#include "core/error.h"
#include "rundir/audit_folder.h"

namespace ra::audit {

bool uses_deterministic_autotune(const spec::ExperimentSpec& spec, const AuditOptions& o,
                                 const std::string& backend) {
  const spec::KernelMode mode = o.mode.value_or(spec.determinism.mode);
  return mode == spec::KernelMode::deterministic && backend == "cuda" && !o.algorithm_pins &&
         !o.shard;
}

std::shared_ptr<const backend::AlgorithmPins> tuning_pins() {
  auto pins = std::make_shared<backend::AlgorithmPins>();
  pins->source = "deterministic autotune (run 0)";
  pins->chosen_by = backend::kDeterministicAutotune;
  pins->complete = false;
  pins->tune_unpinned_deterministic = true;
  return pins;
}

std::shared_ptr<const backend::AlgorithmPins> tuned_pins(const rundir::AlgorithmFile& run0,
                                                         const std::string& source) {
  // Only what run 0 tuned: an op the spec runs nondeterministic took its mode's algorithm there,
  // takes it again here, and must not be labelled a deterministic autotune's choice.
  rundir::AlgorithmFile tuned = run0;
  tuned.algorithms = nlohmann::json::array();
  for (const nlohmann::json& entry : run0.algorithms) {
    if (entry.value("chosen_by", "") == backend::kDeterministicAutotune) {
      tuned.algorithms.push_back(entry);
    }
  }
  backend::AlgorithmPins pins = pins_of(tuned, source);
  pins.chosen_by = backend::kDeterministicAutotune;
  pins.complete = false;  // the other convolutions as their mode chooses, as in run 0
  return std::make_shared<const backend::AlgorithmPins>(std::move(pins));
}

std::shared_ptr<const backend::AlgorithmPins> save_tuned_pins(
    const std::filesystem::path& run0_trace, const std::filesystem::path& audit_dir) {
  rundir::AlgorithmFile file;
  try {
    file = rundir::read_algorithm_file(run0_trace);
  } catch (const InputError&) {
    return nullptr;  // run 0 ended before its ledger was written, or ran no convolution
  }
  const std::filesystem::path path = audit_dir / rundir::kPinFileName;
  rundir::write_algorithm_file(path, file);
  return tuned_pins(file, path.string());
}

}  // namespace ra::audit
