#pragma once
// XXH3-128's long hash (core/xxh3_portable.h, inputs of more than 240 bytes) split by accumulator
// lane and stripe group, so that the 32 threads of a CUDA warp can hash one input together
// (kernels/digest.cu): the pieces, and the same split computed on the host, which the test checks
// against libxxhash. RA_HOST_DEVICE like the scalar code it is made of.
#include <cstddef>
#include <cstdint>

#include "core/xxh3_portable.h"

namespace ra::xxh3::detail {

// The same long hash split by accumulator lane, for a warp of 32 threads per input (kernels/
// digest.cu): lane i's accumulator takes, from each stripe, only words i and i ^ 1 and its own
// secret word, and its scramble touches only itself, so 8 threads can run the 8 lanes; within a
// block the 16 stripes' terms are plain sums modulo 2^64, so 4 groups of 8 threads can add 4
// stripes each and the groups' sums be added in any order. stripe_term(...) is exactly what
// accumulate_stripe adds to acc[lane]; tests/core/xxh3_portable_test.cpp checks the split
// against libxxhash on the host.
RA_HOST_DEVICE std::uint64_t initial_accumulator(int lane) {
  constexpr std::uint64_t kInit[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                                      kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  return kInit[lane];
}

RA_HOST_DEVICE std::uint64_t stripe_term(const std::uint8_t* stripe, std::size_t secret_offset,
                                         int lane) {
  const std::uint64_t keyed =
      read_le64(stripe + 8 * lane) ^ secret64(secret_offset + 8 * static_cast<std::size_t>(lane));
  return read_le64(stripe + 8 * (lane ^ 1)) + mult32to64(keyed, keyed >> 32);
}

RA_HOST_DEVICE std::uint64_t scramble_lane(std::uint64_t acc, int lane) {
  acc = xorshift64(acc, 47);
  acc ^= secret64(kSecretBytes - kStripeBytes + 8 * static_cast<std::size_t>(lane));
  return acc * kPrime32_1;
}

// What group `group` (0..3) adds to lane `lane` in a block of `stripes` stripes (16 but in the
// last block): stripes group, group + 4, ... (a warp's 4 groups then read 4 whole neighbouring
// stripes, 256 contiguous bytes, per load).
RA_HOST_DEVICE std::uint64_t group_block_terms(const std::uint8_t* block, std::size_t stripes,
                                               int lane, int group) {
  std::uint64_t sum = 0;
  for (std::size_t s = static_cast<std::size_t>(group); s < stripes; s += 4) {
    sum += stripe_term(block + s * kStripeBytes, s * kSecretConsumeRate, lane);
  }
  return sum;
}

// hash_long computed as a warp of 8 lanes x 4 groups computes it (kernels/digest.cu), the
// groups' sums added as the warp's butterfly adds them: the host's check of the split.
inline Hash128 hash_long_by_lanes(const std::uint8_t* input, std::size_t len) {
  std::uint64_t acc[8];
  for (int lane = 0; lane < 8; ++lane) acc[lane] = initial_accumulator(lane);
  const std::size_t blocks = (len - 1) / kBlockBytes;
  const auto block_sums = [&](const std::uint8_t* block, std::size_t stripes, int lane) {
    std::uint64_t g[4];
    for (int group = 0; group < 4; ++group)
      g[group] = group_block_terms(block, stripes, lane, group);
    return (g[0] + g[1]) + (g[2] + g[3]);  // xor 8 pairs groups 0-1 and 2-3, xor 16 the pairs
  };
  for (std::size_t b = 0; b < blocks; ++b) {
    for (int lane = 0; lane < 8; ++lane) {
      acc[lane] = scramble_lane(
          acc[lane] + block_sums(input + b * kBlockBytes, kStripesPerBlock, lane), lane);
    }
  }
  const std::size_t stripes = ((len - 1) - kBlockBytes * blocks) / kStripeBytes;
  for (int lane = 0; lane < 8; ++lane) {
    acc[lane] += block_sums(input + blocks * kBlockBytes, stripes, lane);
    acc[lane] += stripe_term(input + len - kStripeBytes,
                             kSecretBytes - kStripeBytes - kSecretLastStripeStart, lane);
  }
  return finish_long(acc, len);
}

}  // namespace ra::xxh3::detail
