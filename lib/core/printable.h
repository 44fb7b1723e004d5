#pragma once
// Text from outside the tool (spec names, layer names, file paths, JSON keys, trace fields) made
// safe to print on a terminal or into a log. A spec name holding "\n  verdict: BITWISE
// IDENTICAL" or an ANSI escape ("\x1b[2K" erases the line) must not be able to forge or hide a
// line of the report, so every control character is written as a visible escape:
//   \n \r \t \\ and \xNN for the other C0 controls and DEL; \u0080..\u009f for C1 controls;
//   \u2028 \u2029 (line separators) and the bidirectional overrides U+202A..U+202E,
//   U+2066..U+2069 ("Trojan Source" reordering) as \uXXXX; bytes that are not valid UTF-8 as
//   \xNN. Everything else (printable ASCII, the backslash included, and valid UTF-8) is kept.
// The backslash is deliberately not doubled: that makes printable idempotent
// (printable(printable(s)) == printable(s)), so text escaped where a message is built (a
// problem naming a spec's name) is not escaped again by the log (apps/repro-audit/printable_log.h).
// The price, that "\n" typed as two characters reads like an escaped newline, is harmless:
// neither can move the cursor. See docs/report.md, "Escaping".
#include <string>
#include <string_view>

namespace ra {

std::string printable(std::string_view text);

// True when printable(text) == text: nothing in it needs escaping.
bool is_printable(std::string_view text);

}  // namespace ra
