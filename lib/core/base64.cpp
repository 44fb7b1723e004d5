#include "core/base64.h"

#include <array>
#include <cstdint>

#include "core/error.h"

namespace ra {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The 6-bit value of each character; -1 outside the alphabet.
constexpr std::array<std::int8_t, 256> decoding_table() {
  std::array<std::int8_t, 256> table{};
  table.fill(-1);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  }
  return table;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t word = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      word = (word << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(word >> (18 - 6 * k)) & 63u] : '=';
    }
  }
  return out;
}

std::string base64_decode(std::string_view text, const std::string& what) {
  static constexpr std::array<std::int8_t, 256> table = decoding_table();
  if (text.size() % 4 != 0) {
    throw InputError(what + ": base64 of " + std::to_string(text.size()) +
                     " characters, not a multiple of 4");
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    std::uint32_t word = 0;
    int padding = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const std::int8_t v = table[static_cast<unsigned char>(c)];
      if (c == '=' && last && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++padding;
        word <<= 6;
        continue;
      }
      if (v < 0 || padding > 0) {
        throw InputError(what + ": base64 character " + std::to_string(i + k + 1) +
                         " is not of the alphabet or follows padding");
      }
      word = (word << 6) | static_cast<std::uint32_t>(v);
    }
    for (int k = 0; k < 3 - padding; ++k) out += static_cast<char>((word >> (16 - 8 * k)) & 0xffu);
  }
  return out;
}

}  // namespace ra
