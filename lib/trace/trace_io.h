#pragma once
// Trace files: JSON Lines (docs/trace-format.md). One header record, one "init" record, one record
// per step and per epoch, and an "end" record; a file without its end record is truncated.
#include <filesystem>
#include <string>
#include <string_view>

#include "trace/trace.h"

namespace ra::trace {

std::string serialize_trace(const Trace& trace);
// The records of a trace as lines, each with its newline: what serialize_trace concatenates, and
// what a streamed trace (trace/trace_file_writer.h) appends one at a time. The header decides the
// version's fields (version 3: buffers, the end record's status).
std::string header_line(const TraceHeader& header);
std::string init_line(const TraceHeader& header, const std::vector<Digest128>& weights,
                      const std::vector<Digest128>& buffers);
std::string step_line(const TraceHeader& header, const StepRecord& step);
std::string epoch_line(const EpochRecord& epoch);
std::string end_line(const TraceHeader& header, const FinalRecord& end);
// The digest a trace header records as `spec_digest`: that of the compact serialisation of the
// canonical spec (spec.dump()) as a u8 tensor (docs/trace-format.md, Digests).
Digest128 spec_digest_of(const nlohmann::json& spec);
// Atomic: the file appears whole under its name or not at all.
void write_trace(const std::filesystem::path& path, const Trace& trace);

// A trace is whole or it is rejected: InputError naming `source`, the line and the field for
// malformed JSON; a missing or misplaced record; a field missing or of the wrong type or range
// (format_version exactly the integer 1, seeds unsigned integers, digests of 32 hex digits, ...);
// digest lists whose length does not match the header; a spec_digest that is not the digest of the
// header's spec; records that disagree with each other (steps, epochs or batches out of order, an
// epoch record miscounting its steps or their mean loss, an end record whose step count, loss,
// weights, evaluation or median step time is not what the records before it say); a missing end
// record (truncated file).
Trace parse_trace(std::string_view text, const std::string& source);
Trace read_trace(const std::filesystem::path& path);

// The end record's `step_launch` object: {"eager", "capture", "replay", "eager_reasons"}.
nlohmann::json step_launch_json(const StepLaunchRecord& launches);

// "0x3f800000" for the bits of 1.0f, and back (InputError on malformed text).
std::string bits_hex(std::uint32_t bits);
std::uint32_t bits_from_hex(const std::string& text);

}  // namespace ra::trace
