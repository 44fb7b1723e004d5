#include "core/text_excerpt.h"

namespace ra {

std::size_t utf8_prefix_length(std::string_view text, std::size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text.size();
  std::size_t end = max_bytes;
  // Continuation bytes are 10xxxxxx: back up to the lead byte of the character that would be cut
  // (at most 3 steps for valid UTF-8; invalid text just gets cut where it is).
  for (int steps = 0; steps < 3 && end > 0; ++steps) {
    if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80) break;
    --end;
  }
  return end;
}

std::string excerpt(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::string out(text.substr(0, utf8_prefix_length(text, max_bytes)));
  out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string quoted_excerpt(std::string_view text, char quote, std::size_t max_bytes) {
  const std::size_t keep = utf8_prefix_length(text, max_bytes);
  std::string out(1, quote);
  out.append(text.substr(0, keep));
  if (keep < text.size()) out += "...";
  out.push_back(quote);
  if (keep < text.size()) out += " (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace ra
