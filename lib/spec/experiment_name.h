#pragma once
// The rules for a spec's "name" (docs/spec.md, "name"). The name becomes the folder
// repro-audit-out/<name> of `run`, and is printed in reports and logs, so it must be exactly one
// harmless file-name component: "../../x" or "/etc" would write outside repro-audit-out/, and a
// newline or an ANSI escape would forge lines of the report.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ra::spec {

// Longest name, in bytes: far below NAME_MAX (255) so "<name>" still fits a file-name component
// on every file system, and short enough to read in a report header.
inline constexpr std::size_t kMaxNameBytes = 128;

// Why `name` cannot be a spec name, phrased to follow "expected ...": nullopt when it can.
// Refused: empty; longer than kMaxNameBytes; "." and ".."; '/' and '\' (path separators on POSIX
// and Windows); NUL and every other control character (C0, DEL, C1), line separators and
// bidirectional overrides; bytes that are not UTF-8; leading or trailing white space.
std::optional<std::string> name_problem(std::string_view name);

}  // namespace ra::spec
