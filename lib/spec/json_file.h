#pragma once
// Reading a JSON document from a file, with errors that name the file (internal to lib/spec).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ra::spec::detail {

// The parsed document. A missing, unreadable or empty file, or a syntax error, throws
// ra::InputError "<path>: ..." (syntax errors with their line and column).
nlohmann::json read_json_file(const std::string& path);

// The document in `text`, read as read_json_file reads a file's contents; `source` names the text
// in messages as the path does there.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

}  // namespace ra::spec::detail
