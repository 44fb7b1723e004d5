#include "spec/experiment_name.h"

#include "core/printable.h"

namespace ra::spec {

std::optional<std::string> name_problem(std::string_view name) {
  const std::string shown = "\"" + printable(name.substr(0, kMaxNameBytes)) + "\"" +
                            (name.size() > kMaxNameBytes ? "..." : "");
  const std::string want = "one file-name component (not empty, at most " +
                           std::to_string(kMaxNameBytes) +
                           " bytes of printable UTF-8, no '/' or '\\', not \".\" or \"..\")";
  if (name.empty()) return want + ", got \"\"";
  if (name.size() > kMaxNameBytes) {
    return want + ", got " + std::to_string(name.size()) + " bytes: " + shown;
  }
  if (name == "." || name == "..") return want + ", got " + shown + " (a path, not a name)";
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos) {
    return want + ", got " + shown + " (a path separator)";
  }
  // printable() escapes exactly the characters that do not belong in a name: control
  // characters, line separators, bidirectional overrides and invalid UTF-8.
  if (!is_printable(name)) return want + ", got " + shown + " (control characters or not UTF-8)";
  if (name.front() == ' ' || name.back() == ' ') {
    return want + ", got " + shown + " (leading or trailing spaces)";
  }
  return std::nullopt;
}

}  // namespace ra::spec
