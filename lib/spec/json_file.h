#pragma once
// Reading a JSON document from a file, with errors that name the file (internal to lib/spec).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ra::spec::detail {

// The parsed document. ra::InputError "<path>: ..." for a missing or unreadable file, one that is
// not a regular file (a directory, a FIFO, a device: core/input_file.h) or larger than 16 MiB;
// "<path>:<line>:<column>: ..." for what formats/json_text.h refuses (syntax errors, duplicate
// keys, numbers out of range, nesting deeper than kMaxJsonDepth).
nlohmann::json read_json_file(const std::string& path);

// The document in `text`, read as read_json_file reads a file's contents (the strict parser of
// formats/json_text.h); `source` names the text in messages as the path does there.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

}  // namespace ra::spec::detail
