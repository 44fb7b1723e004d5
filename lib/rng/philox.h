#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. philox4x32_10(counter, key) is a pure function, so any element of any
// stream can be drawn independently, by any thread, on the CPU or the GPU, with the same bits.
// Header-only and free of the standard library so that kernels/*.cu can include it.
#include <cstdint>

#include "core/host_device.h"

namespace ra::rng {

// The round multipliers and the key increments of Philox4x32 (the increments are the golden ratio
// and sqrt(3) - 1 as 32-bit fractions). At namespace scope so that the vector paths
// (philox_lanes.h) use these very numbers; constexpr scalars, which device code may read too.
inline constexpr std::uint32_t kPhiloxMul0 = 0xD2511F53u, kPhiloxMul1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxWeyl0 = 0x9E3779B9u, kPhiloxWeyl1 = 0xBB67AE85u;

struct PhiloxKey {
  std::uint32_t k0 = 0, k1 = 0;
};

struct PhiloxBlock {
  std::uint32_t v[4];
};

RA_HOST_DEVICE void philox_mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi,
                                   std::uint32_t& lo) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}

// The 128-bit counter is given as four 32-bit words, c0 least significant.
RA_HOST_DEVICE PhiloxBlock philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2,
                                         std::uint32_t c3, PhiloxKey key) {
  std::uint32_t k0 = key.k0, k1 = key.k1;
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(kPhiloxMul0, c0, hi0, lo0);
    philox_mulhilo(kPhiloxMul1, c2, hi1, lo1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0;
    const std::uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kPhiloxWeyl0;
    k1 += kPhiloxWeyl1;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

// Counter convention used throughout repro-audit: two 64-bit coordinates (a = position within a
// draw, b = which draw: epoch, step, attempt). Each block yields four 32-bit words.
RA_HOST_DEVICE PhiloxBlock philox_block(PhiloxKey key, std::uint64_t a, std::uint64_t b) {
  return philox4x32_10(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(a >> 32),
                       static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b >> 32), key);
}

// Word `index` of the sequence (a = index / 4, word index % 4) for draw b.
RA_HOST_DEVICE std::uint32_t philox_word(PhiloxKey key, std::uint64_t index, std::uint64_t b) {
  return philox_block(key, index >> 2, b).v[index & 3];
}

// Uniform float in [0, 1) from the top 24 bits: every value is exact in fp32, on any device.
RA_HOST_DEVICE float uniform_from_bits(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

}  // namespace ra::rng
