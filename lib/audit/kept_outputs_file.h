#pragma once
// The outputs a PyTorch run kept as it ran (lib/python/repro_audit/ops.py; docs/trace-format.md
// "Kept outputs"): `kept-outputs.bin` in the run's snapshot folder, read into a KeptOutputs store
// for the magnitude of a root cause (audit/op_replay.h), as an in-process audit's runs keep theirs.
// Read as traces are: a regular file only (a FIFO, a device or a folder is refused without
// waiting), never through a symbolic link, its size capped before it is read, every field checked
// for its type and range before it is used.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "record/kept_outputs.h"
#include "trace/trace.h"

namespace ra::audit {

inline constexpr const char* kKeptOutputsFileName = "kept-outputs.bin";
// The recorder keeps at most 1 GiB of outputs (REPRO_AUDIT_KEEP_BYTES); with an entry line of
// ~100 bytes per output of at least one byte, a file of a run is below 2 GiB, the cap.
inline constexpr std::uint64_t kMaxKeptOutputsBytes = std::uint64_t{2} << 30;

// Reads `file` into `store` as run `header.run_index`. "" when it was read (or does not exist);
// otherwise why it was not used, naming the file: not a regular file, a link, too large, damaged,
// or another audit's or run's. Never throws for the file's content: the magnitude is what it
// serves, the comparison goes on without.
std::string load_kept_outputs(const std::filesystem::path& file, const trace::TraceHeader& header,
                              record::KeptOutputs& store);

// The file's bytes into `store`: "" when used, else why not (without the file's name). Nothing is
// stored unless the whole file is sound.
std::string parse_kept_outputs(std::string_view bytes, const trace::TraceHeader& header,
                               record::KeptOutputs& store);

}  // namespace ra::audit
