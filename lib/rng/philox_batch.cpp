#include "rng/philox_batch.h"

namespace ra::rng {
namespace {

constexpr int kLanes = 16;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RA_PHILOX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RA_PHILOX_CLONES
#endif

// kLanes consecutive blocks from `first`: the rounds of philox4x32_10, lane by lane.
RA_PHILOX_CLONES void philox_lanes(PhiloxKey key, std::uint64_t first, std::uint64_t draw,
                                   std::uint32_t* words) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  std::uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const std::uint64_t a = first + static_cast<std::uint64_t>(l);
    c0[l] = static_cast<std::uint32_t>(a);
    c1[l] = static_cast<std::uint32_t>(a >> 32);
    c2[l] = static_cast<std::uint32_t>(draw);
    c3[l] = static_cast<std::uint32_t>(draw >> 32);
  }
  std::uint32_t k0 = key.k0, k1 = key.k1;
  for (int round = 0; round < 10; ++round) {
    for (int l = 0; l < kLanes; ++l) {
      const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c0[l];
      const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c2[l];
      const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
      const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
      c0[l] = n0;
      c1[l] = static_cast<std::uint32_t>(p1);
      c2[l] = n2;
      c3[l] = static_cast<std::uint32_t>(p0);
    }
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  for (int l = 0; l < kLanes; ++l) {
    words[4 * l] = c0[l];
    words[4 * l + 1] = c1[l];
    words[4 * l + 2] = c2[l];
    words[4 * l + 3] = c3[l];
  }
}

}  // namespace

void philox_blocks(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks,
                   std::uint32_t* words) {
  std::int64_t i = 0;
  for (; i + kLanes <= blocks; i += kLanes) {
    philox_lanes(key, first + static_cast<std::uint64_t>(i), draw, words + 4 * i);
  }
  for (; i < blocks; ++i) {
    const PhiloxBlock block = philox_block(key, first + static_cast<std::uint64_t>(i), draw);
    for (int j = 0; j < 4; ++j) words[4 * i + j] = block.v[j];
  }
}

}  // namespace ra::rng
