#pragma once
// What the PyTorch recorder found replaying a kept op (exec --keep-op; lib/python/repro_audit/
// replay.py): `replay.json` in a run's snapshot folder, {"op", "step", "index", "times",
// "distinct_outputs", "matches_run", ...}, read into the magnitude of the root cause it belongs
// to. One distinct output equal to the run's: the op is deterministic on its inputs, so the runs
// differ by a setting or an input; more than one: the kernel gives other bits on the same inputs.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "trace/trace.h"

namespace ra::rundir {

inline constexpr const char* kKeptOpReplayFileName = "replay.json";

// The replay of `file` when it is the replay of op `index` of `step`, named `op`; nullopt when
// there is no such file. `why_not` gets why a file that is there was not used (damaged, another
// op's, not a regular file). Never throws for the file's content.
std::optional<compare::KeptOpReplay> read_kept_replay(const std::filesystem::path& file,
                                                      const compare::RootCause& cause,
                                                      std::string& why_not);

// Every op cause's replays from the runs' snapshot folders (reference and differing runs),
// into its magnitude (made when absent); files not used are named in `ignored`.
void load_kept_replays(compare::ComparisonResult& result, const std::vector<trace::Trace>& traces,
                       std::vector<std::string>& ignored);

}  // namespace ra::rundir
