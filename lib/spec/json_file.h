#pragma once
// Reading a JSON document from a file, with errors that name the file (internal to lib/spec).
#include <nlohmann/json.hpp>
#include <string>

namespace ra::spec::detail {

// The parsed document. A missing, unreadable or empty file, or a syntax error, throws
// ra::InputError "<path>: ..." (syntax errors with their line and column).
nlohmann::json read_json_file(const std::string& path);

}  // namespace ra::spec::detail
