#pragma once
// The outputs a PyTorch run kept as it ran (lib/python/repro_audit/ops.py; docs/trace-format.md
// "Kept outputs"): `kept-outputs.bin` in the run's snapshot folder, read into a KeptOutputs store
// for the magnitude of a root cause (audit/op_replay.h), as an in-process audit's runs keep theirs.
#include <filesystem>
#include <string>

#include "record/kept_outputs.h"
#include "trace/trace.h"

namespace ra::audit {

inline constexpr const char* kKeptOutputsFileName = "kept-outputs.bin";

// Reads `file` into `store` as run `header.run_index`. "" when it was read (or does not exist);
// otherwise why it was not used, naming the file: damaged, or another audit's or run's. Never
// throws for the file's content: the magnitude is what it serves, the comparison goes on without.
std::string load_kept_outputs(const std::filesystem::path& file, const TraceHeader& header,
                              KeptOutputs& store);

}  // namespace ra::audit
