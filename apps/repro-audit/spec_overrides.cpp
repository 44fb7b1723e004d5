#include "spec_overrides.h"

#include <string>

#include "core/error.h"
#include "option_checks.h"
#include "spec/limits.h"
#include "spec/parse.h"

namespace ra::app {

void add_epochs_option(CLI::App& cmd, std::optional<int>& epochs) {
  cmd.add_option("--epochs", epochs,
                 "Epochs of every run (overrides the spec's train.epochs; recorded in the "
                 "manifest and traces as the spec run; train.max_steps still stops a run)")
      ->check(whole_number_in(1, spec::kMaxEpochs));
}

void override_epochs(spec::ExperimentSpec& s, std::optional<int> epochs) {
  if (!epochs || *epochs == s.train.epochs) return;
  spec::ExperimentSpec changed = s;
  changed.train.epochs = *epochs;
  // Validated again as a whole: more epochs mean more step records in memory (spec.md, "Limits").
  try {
    changed = spec::parse_spec(spec::to_json(changed), s.base_dir);
  } catch (const ValidationError& e) {
    std::string problems;
    for (const Problem& p : e.problems()) {
      problems +=
          (problems.empty() ? "" : "; ") + (p.path.empty() ? "" : p.path + ": ") + p.message;
    }
    throw InputError("--epochs " + std::to_string(*epochs) + ": " + problems);
  }
  changed.name = s.name;
  s = std::move(changed);
}

}  // namespace ra::app
