#pragma once
// Reading a JSON document from a file, with errors that name the file (internal to lib/spec).
#include <nlohmann/json.hpp>
#include <string>

namespace ra::spec::detail {

// The parsed document. ra::InputError "<path>: ..." for a missing or unreadable file, one that is
// not a regular file (a directory, a FIFO, a device: core/input_file.h) or larger than 16 MiB;
// "<path>:<line>:<column>: ..." for what spec/json_text.h refuses (syntax errors, duplicate keys,
// numbers out of range, nesting deeper than kMaxJsonDepth).
nlohmann::json read_json_file(const std::string& path);

}  // namespace ra::spec::detail
