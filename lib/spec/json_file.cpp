#include "spec/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ra::spec::detail {
namespace {

// nlohmann's message is "[json.exception.parse_error.101] parse error at line 3, column 12:
// syntax error while parsing value - unexpected ','; ..."; keep what follows "parse error ".
std::string syntax_error_text(const nlohmann::json::parse_error& e) {
  const std::string what = e.what();
  const std::string marker = "parse error ";
  const auto at = what.find(marker);
  if (at != std::string::npos) return what.substr(at + marker.size());
  return "at byte " + std::to_string(e.byte) + ": " + what;
}

}  // namespace

nlohmann::json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path + ": is a directory, expected a JSON file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
  return parse_json_text(text.str(), path);
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(source + ": invalid JSON " + syntax_error_text(e));
  }
}

}  // namespace ra::spec::detail
