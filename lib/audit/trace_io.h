#pragma once
// Trace files: JSON Lines (docs/trace-format.md). One header record, one "init" record, one record
// per step and per epoch, and an "end" record; a file without its end record is truncated.
#include <filesystem>
#include <string>
#include <string_view>

#include "audit/trace.h"

namespace ra::audit {

std::string serialize_trace(const Trace& trace);
// Atomic: the file appears whole under its name or not at all.
void write_trace(const std::filesystem::path& path, const Trace& trace);

// InputError naming `source` and the line for: malformed JSON, a missing or misplaced record, a
// format version this tool does not read, a malformed digest, lists whose length does not match
// the header, steps out of order, a missing end record (truncated file).
Trace parse_trace(std::string_view text, const std::string& source);
Trace read_trace(const std::filesystem::path& path);

// "0x3f800000" for the bits of 1.0f, and back (InputError on malformed text).
std::string bits_hex(std::uint32_t bits);
std::uint32_t bits_from_hex(const std::string& text);

}  // namespace ra::audit
