#include "rng/stream.h"

#include <xxhash.h>

#include <cmath>

namespace ra::rng {

PhiloxKey derive_key(std::uint64_t seed, std::string_view stream_name) {
  const XXH64_hash_t h = XXH3_64bits_withSeed(stream_name.data(), stream_name.size(), seed);
  return PhiloxKey{static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(h >> 32)};
}

std::string init_stream(std::string_view layer_name) {
  return "init/" + std::string(layer_name);
}

std::string dropout_stream(std::string_view layer_name) {
  return "dropout/" + std::string(layer_name);
}

std::uint64_t uniform_below(std::uint64_t random64, std::uint64_t bound) {
  __extension__ using u128 = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<u128>(random64) * bound) >> 64);
}

float standard_normal(std::uint32_t w0, std::uint32_t w1) {
  // u1 in (0, 1] so log(u1) is finite; u2 in [0, 1).
  const double u1 = (static_cast<double>(w0) + 1.0) / 4294967296.0;
  const double u2 = static_cast<double>(w1) / 4294967296.0;
  const double two_pi = 6.283185307179586476925286766559;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2));
}

}  // namespace ra::rng
