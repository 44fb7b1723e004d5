#pragma once
// The command a report suggests to localise a divergence: this one again, recording the ops of
// the steps where the runs first part (`run` and `exec` --trace-ops).
#include <filesystem>
#include <set>
#include <string>

namespace ra::app {

// A word as the shell reads it: quoted when it holds anything but plain characters.
std::string shell_word(const std::string& word);

// This command again, recording the ops of `window` into a folder of its own (`out` + "-ops"):
// the options that choose a folder or report files are left out (the audit there is done), the
// rest kept. The new options go before a "--" (exec's command after it stays as it was).
// `tensor_digests`: that window recorded per tensor as well (added to the command's own
// --tensor-digests, which it keeps: the values add up).
std::string rerun_with_window(const std::string& window, const std::filesystem::path& out,
                              bool tensor_digests = false);

// This command again without the options named in `dropped` (each with its value: "--mode X" or
// "--mode=X"), for a next step that adds its own: `run SPEC --invariance` suggests itself with
// --mode batch_invariant.
std::string rerun_without(const std::set<std::string>& dropped);

}  // namespace ra::app
