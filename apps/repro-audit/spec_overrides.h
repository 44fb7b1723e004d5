#pragma once
// Options that change the spec a command trains (--epochs). Each is applied to the validated spec,
// which is then validated again: what trains, what the manifest and every trace header record,
// and the spec digest by which compare pairs runs are all the spec actually run, never the file's.
#include <CLI/CLI.hpp>

#include <optional>

#include "spec/spec.h"

namespace ra::app {

// --epochs N (1..spec::kMaxEpochs; 0, a sign or a fraction is refused as usage, exit 2).
void add_epochs_option(CLI::App& cmd, std::optional<int>& epochs);

// train.epochs = *epochs, then the spec validated again (its memory plan counts the steps);
// nothing without a value. InputError "--epochs N: ..." listing the problems of the spec with it.
void override_epochs(spec::ExperimentSpec& s, std::optional<int> epochs);

}  // namespace ra::app
