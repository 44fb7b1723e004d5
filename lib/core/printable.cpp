#include "core/printable.h"

#include <cstdint>
#include <cstdio>
#include <optional>

namespace ra {
namespace {

// One UTF-8 sequence starting at text[i]: its code point and length, or nullopt when the bytes
// there are not a valid, shortest-form sequence of a scalar value (no surrogates, <= U+10FFFF).
struct Decoded {
  char32_t code_point;
  std::size_t length;
};
std::optional<Decoded> decode_utf8(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return Decoded{b0, 1};
  std::size_t length = 0;
  char32_t cp = 0, min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return std::nullopt;  // a continuation byte, an overlong lead (C0, C1) or F5..FF
  }
  if (i + length > text.size()) return std::nullopt;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  return Decoded{cp, length};
}

// Code points above ASCII that move or reorder what a terminal shows.
bool is_hidden_control(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) ||      // C1 controls (U+009B is a CSI on some terminals)
         cp == 0x2028 || cp == 0x2029 ||    // line and paragraph separators
         (cp >= 0x202A && cp <= 0x202E) ||  // bidirectional embeddings and overrides
         (cp >= 0x2066 && cp <= 0x2069);    // bidirectional isolates
}

void append_hex_byte(std::string& out, unsigned char b) {
  char text[8];
  std::snprintf(text, sizeof text, "\\x%02x", b);
  out += text;
}

void append_code_point(std::string& out, char32_t cp) {
  char text[12];
  std::snprintf(text, sizeof text, "\\u%04x", static_cast<unsigned>(cp));
  out += text;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto decoded = decode_utf8(text, i);
    if (!decoded) {
      append_hex_byte(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    const char32_t cp = decoded->code_point;
    if (cp < 0x80) {
      const char c = static_cast<char>(cp);
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (cp < 0x20 || cp == 0x7F) {
            append_hex_byte(out, static_cast<unsigned char>(c));
          } else {
            out += c;
          }
      }
    } else if (is_hidden_control(cp)) {
      append_code_point(out, cp);
    } else {
      out.append(text.substr(i, decoded->length));
    }
    i += decoded->length;
  }
  return out;
}

bool is_printable(std::string_view text) {
  return printable(text) == text;
}

}  // namespace ra
