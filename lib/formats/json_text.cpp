#include "formats/json_text.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <system_error>

#include "core/error.h"
#include "core/text_excerpt.h"

namespace ra::formats {
namespace {

using Json = nlohmann::json;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// `s` as a JSON string literal. Values built in code (not by the parser) may hold invalid UTF-8:
// it is shown as U+FFFD instead of making dump() throw.
std::string dump_string(std::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF) that starts at `s[0]`, or 0 when it is not one.
std::size_t utf8_sequence_length(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned char lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned char lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
}

// Recursive descent; the recursion is bounded by max_depth (two frames per level), checked
// before descending, so no input can run the stack out.
class Parser {
 public:
  Parser(std::string_view text, const std::string& source, std::size_t first_line, int max_depth)
      : text_(text), source_(source), first_line_(first_line), max_depth_(max_depth) {}

  Json document() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte-order mark
    skip_space();
    if (at_end()) fail("invalid JSON: expected a value, found " + found());
    Json v = value(0);
    skip_space();
    if (!at_end()) fail("invalid JSON: unexpected " + found() + " after the value");
    return v;
  }

 private:
  [[noreturn]] void fail_at(std::size_t at, const std::string& problem) const {
    std::size_t line = first_line_, line_start = 0;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    // Columns count characters, as editors do: UTF-8 continuation bytes do not start one.
    std::size_t column = 1;
    for (std::size_t i = line_start; i < at && i < text_.size(); ++i) {
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++column;
    }
    throw InputError(source_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                     problem);
  }
  [[noreturn]] void fail(const std::string& problem) const { fail_at(pos_, problem); }

  bool at_end() const { return pos_ >= text_.size(); }
  bool next_is(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  // What stands at the current position, for "expected ..., found ...".
  std::string found() const {
    if (at_end()) return "the end of the text";
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (std::isalpha(c)) {  // a bare word: True, NaN, undefined, a key without quotes
      std::size_t end = pos_;
      while (end < text_.size() && std::isalnum(static_cast<unsigned char>(text_[end]))) ++end;
      return "'" + excerpt(text_.substr(pos_, end - pos_), 16) + "'";
    }
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    char hex[16];
    std::snprintf(hex, sizeof hex, "byte 0x%02X", static_cast<unsigned>(c));
    return hex;
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }

  Json value(int depth) {
    if (at_end()) fail("invalid JSON: expected a value, found " + found());
    switch (text_[pos_]) {
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case '"':
        return Json(string());
      case 't':
        return literal("true", Json(true));
      case 'f':
        return literal("false", Json(false));
      case 'n':
        return literal("null", Json(nullptr));
      default:
        if (next_is('-') || is_digit(text_[pos_])) return number();
        fail("invalid JSON: expected a value, found " + found());
    }
  }

  Json literal(std::string_view word, Json v) {
    if (text_.substr(pos_, word.size()) != word) {
      fail("invalid JSON: expected a value, found " + found());
    }
    pos_ += word.size();
    return v;
  }

  void enter(int depth) const {
    if (depth > max_depth_) {
      fail("objects and arrays nest deeper than " + std::to_string(max_depth_) +
           " levels, the most this tool reads");
    }
  }

  Json object(int depth) {
    enter(depth);
    ++pos_;  // '{'
    Json object = Json::object();
    skip_space();
    if (next_is('}')) {
      ++pos_;
      return object;
    }
    for (;;) {
      skip_space();
      if (!next_is('"')) {
        fail("invalid JSON: expected a key in double quotes, found " + found());
      }
      const std::size_t key_at = pos_;
      std::string key = string();
      // nlohmann would keep the last value silently; a spec that sets a field twice is a mistake
      // the user must see (which of the two did they mean?).
      if (object.contains(key)) {
        fail_at(key_at, "duplicate key " + json_string_excerpt(key) +
                            " (a key may appear only once in an object)");
      }
      skip_space();
      if (!next_is(':')) fail("invalid JSON: expected ':' after the key, found " + found());
      ++pos_;
      skip_space();
      object.emplace(std::move(key), value(depth));
      skip_space();
      if (next_is(',')) {
        ++pos_;
        skip_space();
        if (next_is('}')) fail("invalid JSON: a ',' before '}' (JSON has no trailing commas)");
        continue;
      }
      if (next_is('}')) {
        ++pos_;
        return object;
      }
      fail("invalid JSON: expected ',' or '}' after an object member, found " + found());
    }
  }

  Json array(int depth) {
    enter(depth);
    ++pos_;  // '['
    Json array = Json::array();
    skip_space();
    if (next_is(']')) {
      ++pos_;
      return array;
    }
    for (;;) {
      skip_space();
      array.push_back(value(depth));
      skip_space();
      if (next_is(',')) {
        ++pos_;
        skip_space();
        if (next_is(']')) fail("invalid JSON: a ',' before ']' (JSON has no trailing commas)");
        continue;
      }
      if (next_is(']')) {
        ++pos_;
        return array;
      }
      fail("invalid JSON: expected ',' or ']' after an array element, found " + found());
    }
  }

  std::string string() {
    const std::size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    for (;;) {
      // Plain ASCII runs are copied at once.
      std::size_t run = pos_;
      while (run < text_.size()) {
        const auto c = static_cast<unsigned char>(text_[run]);
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
        ++run;
      }
      out.append(text_.substr(pos_, run - pos_));
      pos_ = run;
      if (at_end()) fail_at(start, "invalid JSON: a string that is never closed");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        escape(out);
      } else if (c < 0x20) {
        char code[8];
        std::snprintf(code, sizeof code, "%04X", static_cast<unsigned>(c));
        fail(std::string("invalid JSON: control character U+") + code +
             " inside a string (write it as an escape such as \\n or \\u" + code + ")");
      } else {
        const std::size_t length = utf8_sequence_length(text_.substr(pos_));
        if (length == 0) fail("invalid JSON: a string holds bytes that are not valid UTF-8");
        out.append(text_.substr(pos_, length));
        pos_ += length;
      }
    }
  }

  void escape(std::string& out) {
    const std::size_t at = pos_;
    ++pos_;  // '\'
    if (at_end()) fail_at(at, "invalid JSON: a string that is never closed");
    const char e = text_[pos_++];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out.push_back(e);
        return;
      case 'b':
        out.push_back('\b');
        return;
      case 'f':
        out.push_back('\f');
        return;
      case 'n':
        out.push_back('\n');
        return;
      case 'r':
        out.push_back('\r');
        return;
      case 't':
        out.push_back('\t');
        return;
      case 'u':
        break;
      default:
        fail_at(at,
                "invalid JSON: unknown escape in a string (JSON has \\\" \\\\ \\/ \\b \\f \\n "
                "\\r \\t \\uXXXX)");
    }
    std::uint32_t code = hex4(at);
    if (code >= 0xDC00 && code <= 0xDFFF) {
      fail_at(at, "invalid JSON: \\u escape of a lone low surrogate (not a character)");
    }
    if (code >= 0xD800 && code <= 0xDBFF) {
      // A high surrogate must be followed by the low half of the pair: \uD83D\uDE00.
      if (text_.substr(pos_, 2) != "\\u") {
        fail_at(at, "invalid JSON: \\u escape of a high surrogate without its low half");
      }
      const std::size_t low_at = pos_;
      pos_ += 2;
      const std::uint32_t low = hex4(low_at);
      if (low < 0xDC00 || low > 0xDFFF) {
        fail_at(at, "invalid JSON: \\u escape of a high surrogate without its low half");
      }
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, code);
  }

  std::uint32_t hex4(std::size_t escape_at) {
    std::uint32_t code = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (at_end()) fail_at(escape_at, "invalid JSON: \\u needs 4 hex digits");
      const char c = text_[pos_];
      std::uint32_t digit = 0;
      if (is_digit(c)) {
        digit = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        fail_at(escape_at, "invalid JSON: \\u needs 4 hex digits");
      }
      code = code * 16 + digit;
    }
    return code;
  }

  void digits(const char* where) {
    if (!(pos_ < text_.size() && is_digit(text_[pos_]))) {
      fail(std::string("invalid JSON: expected a digit ") + where + ", found " + found());
    }
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
  }

  Json number() {
    const std::size_t start = pos_;
    if (next_is('-')) ++pos_;
    if (next_is('0')) {
      ++pos_;
      if (pos_ < text_.size() && is_digit(text_[pos_])) {
        fail_at(start, "invalid JSON: a number with a leading zero");
      }
    } else {
      digits(next_is('-') ? "after '-'" : "in a number");
    }
    bool integral = true;
    if (next_is('.')) {
      integral = false;
      ++pos_;
      digits("after the decimal point");
    }
    if (next_is('e') || next_is('E')) {
      integral = false;
      ++pos_;
      if (next_is('+') || next_is('-')) ++pos_;
      digits("in the exponent");
    }
    const std::string_view token = text_.substr(start, pos_ - start);
    const char* first = token.data();
    const char* last = token.data() + token.size();
    // The types nlohmann gives: negative integers int64, others uint64, the rest double.
    if (integral) {
      std::from_chars_result r{};
      Json v;
      if (token[0] == '-') {
        std::int64_t i = 0;
        r = std::from_chars(first, last, i);
        v = i;
      } else {
        std::uint64_t u = 0;
        r = std::from_chars(first, last, u);
        v = u;
      }
      if (r.ec != std::errc{} || r.ptr != last) {
        fail_at(start, "integer " + excerpt(token) +
                           " is out of range (integers must lie in -2^63 .. 2^64-1)");
      }
      return v;
    }
    double d = 0;
    const auto r = std::from_chars(first, last, d);
    if (r.ec != std::errc{} || r.ptr != last) {
      fail_at(start, "number " + excerpt(token) +
                         " is out of range for a double (non-zero magnitudes from 4.9e-324 to "
                         "1.8e308)");
    }
    return Json(d);
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t first_line_;
  int max_depth_;
  std::size_t pos_ = 0;
};

// Nesting shown before "[...]" / "{...}" takes over: enough to read a shape or a small object.
constexpr int kExcerptDepth = 4;

void render(const Json& v, std::string& out, std::size_t limit, int depth) {
  switch (v.type()) {
    case Json::value_t::object:
    case Json::value_t::array: {
      const bool is_object = v.is_object();
      if (v.empty()) {
        out += is_object ? "{}" : "[]";
        return;
      }
      if (depth >= kExcerptDepth) {
        out += is_object ? "{...}" : "[...]";
        return;
      }
      out += is_object ? '{' : '[';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ',';
        first = false;
        if (out.size() >= limit) {
          out += "...";
          break;
        }
        if (is_object) out += json_string_excerpt(it.key()) + ":";
        render(it.value(), out, limit, depth + 1);
      }
      out += is_object ? '}' : ']';
      return;
    }
    case Json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      const std::size_t room = limit > out.size() + 8 ? limit - out.size() : 8;
      const std::size_t keep = utf8_prefix_length(s, room);
      out += dump_string(std::string_view(s).substr(0, keep));
      if (keep < s.size()) out.insert(out.size() - 1, "...");
      return;
    }
    default:
      out += v.dump();  // numbers, booleans, null: short by nature
      return;
  }
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& source,
                               std::size_t first_line, int max_depth) {
  return Parser(text, source, first_line, max_depth).document();
}

std::string json_string_excerpt(std::string_view text) {
  const std::size_t keep = utf8_prefix_length(text, kExcerptBytes);
  std::string out = dump_string(text.substr(0, keep));
  if (keep < text.size()) {
    out.insert(out.size() - 1, "...");
    out += " (" + std::to_string(text.size()) + " bytes)";
  }
  return out;
}

std::string json_excerpt(const nlohmann::json& value, std::size_t max_bytes) {
  std::string out;
  render(value, out, max_bytes, 0);
  return out;
}

}  // namespace ra::formats
