#pragma once
// The one strict JSON parser for text from users' files: specs, every line of a trace, snapshot
// headers. nlohmann::json::parse alone accepts what a careful reader must not:
//   - duplicate keys (the last one silently wins, so `"lr": 0.1, ..., "lr": 10` trains with 10);
//   - numbers it cannot hold (1e400 throws an out_of_range error that is not a parse error, a
//     400-digit integer quietly becomes a float);
//   - any nesting depth, with a recursive parser and printer: 100,000 '[' overflow the stack.
// This parser refuses each of them, and every refusal is an ra::InputError that names the file,
// the line and the column, like a compiler: "spec.json:3:11: duplicate key \"lr\" ...".
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ra::formats {

// No document of this tool nests deeper than 6 levels (a trace header's spec, an environment);
// 64 leaves room for any future field and keeps every recursive walk over a value (printing,
// comparing, destroying) shallow.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`, which must hold exactly one JSON value (RFC 8259; a UTF-8 byte-order mark at
// the start is skipped). Integers must fit in int64 (negative) or uint64 and become nlohmann's
// integer or unsigned types; numbers with a fraction or exponent must be finite doubles and become
// floats (the types nlohmann's own parser gives, so dump() writes the same text). Strings must be
// valid UTF-8 without raw control characters. Objects may not repeat a key, and objects and
// arrays may nest at most `max_depth` levels.
//
// Errors: InputError "<source>:<line>:<column>: <problem>", lines counted from `first_line`
// (a trace passes the number of the line being parsed), columns in characters from 1. Input
// quoted in the message is shortened (core/text_excerpt.h).
nlohmann::json parse_json_text(std::string_view text, const std::string& source,
                               std::size_t first_line = 1, int max_depth = kMaxJsonDepth);

// A bounded, one-line rendering of a value for messages: compact JSON like dump(), cut after
// about `max_bytes` bytes with "..." (long strings are cut inside their quotes), and nesting
// beyond a few levels shown as "[...]" or "{...}". Never recursion deeper than that, never the
// whole of a large value.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_bytes = 64);

// `text` as a JSON string literal (escaped), cut to kExcerptBytes (core/text_excerpt.h) with the
// full length after it: "abc" or "abc..." (5242880 bytes).
std::string json_string_excerpt(std::string_view text);

}  // namespace ra::formats
