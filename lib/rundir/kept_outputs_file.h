#pragma once
// The outputs a PyTorch run kept as it ran (lib/python/repro_audit/op_records.py;
// docs/trace-format.md "Kept outputs"): `kept-outputs.bin` in the run's snapshot folder, read into
// its entries, which the audit keeps for the magnitude of a root cause (audit/op_replay.h) as an
// in-process audit's runs keep theirs (record/kept_outputs.h).
// Read as traces are: a regular file only (a FIFO, a device or a folder is refused without
// waiting), never through a symbolic link, its size capped before it is read, every field checked
// for its type and range before it is used.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/digest.h"
#include "trace/trace.h"

namespace ra::rundir {

inline constexpr const char* kKeptOutputsFileName = "kept-outputs.bin";
// The recorder keeps at most 1 GiB of outputs (REPRO_AUDIT_KEEP_BYTES); with an entry line of
// ~100 bytes per output of at least one byte, a file of a run is below 2 GiB, the cap.
inline constexpr std::uint64_t kMaxKeptOutputsBytes = std::uint64_t{2} << 30;

// The outputs of one op record of the run: record `index` of step `step`, each output's bytes (in
// the record's order) and the dtype of its elements.
struct KeptOutputsEntry {
  std::int64_t step = 0;
  std::size_t index = 0;
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<DType> dtypes;
};

// Reads `file`, of run `header.run_index`, into `entries` (in the file's order). "" when it was
// read (or does not exist); otherwise why it was not used, naming the file: not a regular file, a
// link, too large, damaged, or another audit's or run's. Never throws for the file's content: the
// magnitude is what it serves, the comparison goes on without.
std::string load_kept_outputs(const std::filesystem::path& file, const trace::TraceHeader& header,
                              std::vector<KeptOutputsEntry>& entries);

// The file's bytes into `entries`: "" when used, else why not (without the file's name). Nothing
// is added unless the whole file is sound.
std::string parse_kept_outputs(std::string_view bytes, const trace::TraceHeader& header,
                               std::vector<KeptOutputsEntry>& entries);

}  // namespace ra::rundir
