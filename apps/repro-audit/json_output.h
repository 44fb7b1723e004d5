#pragma once
// JSON documents printed or written by the commands. nlohmann::json escapes control characters
// in strings (\n, \u001b), so JSON output needs no printable(); but its default dump throws on
// bytes that are not UTF-8 (a trace path or a file name from the command line can hold them),
// which would end a finished audit with an internal error. Such bytes are replaced by U+FFFD.
#include <nlohmann/json.hpp>
#include <string>

namespace ra::app {

inline std::string json_text(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ra::app
