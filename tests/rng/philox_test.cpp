// Philox4x32-10 against the published Random123 known-answer vectors, the counter layout used by
// every stream, the stream-key derivation and the conversions from random bits to numbers.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "rng/philox.h"
#include "rng/stream.h"

namespace {

using ra::rng::PhiloxBlock;
using ra::rng::PhiloxKey;

struct KnownAnswer {
  std::array<std::uint32_t, 4> counter;
  PhiloxKey key;
  std::array<std::uint32_t, 4> expected;
};

// Random123 1.09, examples/kat_vectors, lines "philox4x32 10 ...".
const KnownAnswer kPhilox4x32_10[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

void require_block(const PhiloxBlock& got, const std::array<std::uint32_t, 4>& expected) {
  for (int i = 0; i < 4; ++i) {
    INFO("word " << i);
    REQUIRE(got.v[i] == expected[i]);
  }
}

}  // namespace

TEST_CASE("philox4x32_10 matches the Random123 known-answer vectors", "[rng][philox]") {
  for (const KnownAnswer& kat : kPhilox4x32_10) {
    const auto& c = kat.counter;
    require_block(ra::rng::philox4x32_10(c[0], c[1], c[2], c[3], kat.key), kat.expected);
  }
}

TEST_CASE("philox_block packs (a, b) as counter words (a.lo, a.hi, b.lo, b.hi)", "[rng][philox]") {
  // The third vector again, now through the 64-bit coordinates every stream uses:
  // a = c1:c0 = 0x85a308d3'243f6a88, b = c3:c2 = 0x03707344'13198a2e.
  const KnownAnswer& kat = kPhilox4x32_10[2];
  require_block(ra::rng::philox_block(kat.key, 0x85a308d3243f6a88ull, 0x0370734413198a2eull),
                kat.expected);
  // All-ones coordinates are the second vector.
  require_block(ra::rng::philox_block(PhiloxKey{0xffffffff, 0xffffffff}, ~0ull, ~0ull),
                kPhilox4x32_10[1].expected);
}

TEST_CASE("philox_word numbers the words of consecutive blocks", "[rng][philox]") {
  const PhiloxKey key{0x12345678, 0x9abcdef0};
  const std::uint64_t b = 0x0000000700000003ull;
  // Words 0..3 are block a=0, words 4..7 block a=1, word 4k+j is word j of block a=k.
  for (std::uint64_t index = 0; index < 12; ++index) {
    const PhiloxBlock block = ra::rng::philox4x32_10(static_cast<std::uint32_t>(index / 4), 0,
                                                     0x00000003, 0x00000007, key);
    INFO("index " << index);
    REQUIRE(ra::rng::philox_word(key, index, b) == block.v[index % 4]);
  }
  // A word index beyond 2^32 blocks carries into the high counter word.
  const std::uint64_t far = (std::uint64_t{5} << 34) + 6;  // block 5 * 2^32 + 1, word 2
  REQUIRE(ra::rng::philox_word(key, far, b) ==
          ra::rng::philox4x32_10(1, 5, 0x00000003, 0x00000007, key).v[2]);
}

TEST_CASE("derive_key is stable and separates names and seeds", "[rng][stream]") {
  // Hard-coded once from XXH3_64bits_withSeed("data/order", 10, 42) = 0x343889fed19d6110, low
  // word first. If this fails, every draw of every run (and every recorded trace) changes.
  const PhiloxKey key = ra::rng::derive_key(42, "data/order");
  CHECK(key.k0 == 0xd19d6110u);
  CHECK(key.k1 == 0x343889feu);
  REQUIRE(ra::rng::derive_key(42, ra::rng::kDataOrderStream).k0 == key.k0);

  std::set<std::uint64_t> keys;
  const std::vector<std::string> names = {"data/order",
                                          "data/synthetic",
                                          ra::rng::init_stream("conv2d_0.weight"),
                                          ra::rng::init_stream("conv2d_1.weight"),
                                          ra::rng::dropout_stream("dropout_0"),
                                          ""};
  for (std::uint64_t seed : {0ull, 1ull, 42ull, 43ull}) {
    for (const std::string& name : names) {
      const PhiloxKey k = ra::rng::derive_key(seed, name);
      keys.insert((std::uint64_t{k.k1} << 32) | k.k0);
    }
  }
  REQUIRE(keys.size() == 4 * names.size());
  REQUIRE(ra::rng::init_stream("conv2d_0.weight") == "init/conv2d_0.weight");
  REQUIRE(ra::rng::dropout_stream("dropout_0") == "dropout/dropout_0");
}

TEST_CASE("uniform_from_bits is k * 2^-24 from the top 24 bits, 0 <= u < 1", "[rng][uniform]") {
  CHECK(ra::rng::uniform_from_bits(0x00000000u) == 0.0f);
  CHECK(ra::rng::uniform_from_bits(0x000000ffu) == 0.0f);  // the low 8 bits are dropped
  CHECK(ra::rng::uniform_from_bits(0x00000100u) == std::ldexp(1.0f, -24));
  CHECK(ra::rng::uniform_from_bits(0x80000000u) == 0.5f);
  // The largest value is the float just below 1: 1 - 2^-24.
  CHECK(ra::rng::uniform_from_bits(0xffffffffu) == std::nextafter(1.0f, 0.0f));
  // Every one of the 2^24 values is exact: k * 2^-24 in double equals the float.
  std::uint32_t inexact = 0;
  for (std::uint32_t k = 0; k < (1u << 24); ++k) {
    const float u = ra::rng::uniform_from_bits((k << 8) | 0xa5u);
    if (static_cast<double>(u) != std::ldexp(static_cast<double>(k), -24)) ++inexact;
  }
  REQUIRE(inexact == 0);
}

TEST_CASE("uniform_below stays below the bound and is uniform", "[rng][uniform]") {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  CHECK(ra::rng::uniform_below(0, 10) == 0);
  CHECK(ra::rng::uniform_below(kMax, 10) == 9);
  CHECK(ra::rng::uniform_below(kMax, 1) == 0);
  CHECK(ra::rng::uniform_below(std::uint64_t{1} << 63, 7) == 3);  // floor(7 / 2)
  CHECK(ra::rng::uniform_below(kMax, kMax) == kMax - 1);

  // 100k draws into 10 buckets: each count is 10000 +- 5 sigma, sigma = sqrt(1e5 * 0.1 * 0.9) = 95.
  const PhiloxKey key = ra::rng::derive_key(7, "test/uniform_below");
  std::array<int, 10> counts{};
  for (std::uint64_t i = 0; i < 100000; ++i) {
    const PhiloxBlock block = ra::rng::philox_block(key, i, 0);
    const std::uint64_t random64 = (std::uint64_t{block.v[1]} << 32) | block.v[0];
    const std::uint64_t r = ra::rng::uniform_below(random64, 10);
    REQUIRE(r < 10);
    ++counts[r];
    // Bounds that are not powers of two and near 2^64 stay in range too.
    REQUIRE(ra::rng::uniform_below(random64, 1000003) < 1000003);
    REQUIRE(ra::rng::uniform_below(random64, kMax - 12) < kMax - 12);
  }
  for (int c : counts) CHECK(std::abs(c - 10000) < 5 * 95);
}

TEST_CASE("standard_normal: Box-Muller values and moments", "[rng][normal]") {
  // u1 = (w0 + 1) / 2^32, u2 = w1 / 2^32, z = sqrt(-2 ln u1) cos(2 pi u2).
  CHECK(ra::rng::standard_normal(0xffffffffu, 0x12345678u) == 0.0f);  // u1 = 1 -> ln u1 = 0
  // u1 = 1/2, u2 = 0: z = sqrt(2 ln 2) = 1.1774100225154747.
  CHECK(ra::rng::standard_normal(0x7fffffffu, 0) == static_cast<float>(1.1774100225154747));
  // u1 = 1/2, u2 = 1/2: cos(pi) = -1.
  CHECK(ra::rng::standard_normal(0x7fffffffu, 0x80000000u) ==
        static_cast<float>(-1.1774100225154747));
  // The smallest u1 = 2^-32 gives the largest |z| = sqrt(64 ln 2) = 6.660437..., still finite.
  CHECK(ra::rng::standard_normal(0, 0) == static_cast<float>(std::sqrt(64.0 * std::log(2.0))));

  // 100k draws: mean within 5 sigma = 5 / sqrt(1e5) = 0.0158; variance within 5 * sqrt(2 / 1e5)
  // = 0.0224 of 1; the share beyond 2 is 4.55% +- 5 * sqrt(0.0455 * 0.9545 / 1e5) = 0.33%.
  const PhiloxKey key = ra::rng::derive_key(11, "test/normal");
  constexpr int kDraws = 100000;
  double sum = 0, sum_sq = 0;
  int beyond_two = 0;
  for (std::uint64_t i = 0; i < kDraws; ++i) {
    const PhiloxBlock block = ra::rng::philox_block(key, i, 0);
    const double z = ra::rng::standard_normal(block.v[0], block.v[1]);
    sum += z;
    sum_sq += z * z;
    if (std::fabs(z) > 2.0) ++beyond_two;
  }
  const double mean = sum / kDraws;
  const double variance = sum_sq / kDraws - mean * mean;
  CHECK(std::fabs(mean) < 0.0158);
  CHECK(std::fabs(variance - 1.0) < 0.0224);
  CHECK(std::fabs(beyond_two / double(kDraws) - 0.0455) < 0.0033);
}
