// The portable XXH3-128 (core/xxh3_portable.h, also compiled for CUDA devices) against libxxhash's
// XXH3_128bits, the implementation the host digest uses: every length 0..2048 (all short and
// mid-size branches, the first two 1 KiB blocks of the long path), then lengths around every
// boundary of the long path up to 70000 (past one 64 KiB digest chunk), aligned and unaligned.
#include "core/xxh3_portable.h"

#include "core/xxh3_lanes.h"

#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using ra::xxh3::Hash128;
using ra::xxh3::xxh3_128;

constexpr std::size_t kMaxLength = 70000;

// Random bytes from a fixed seed (std::mt19937_64's sequence is fixed by the standard).
std::vector<std::uint8_t> random_bytes(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<std::uint8_t> bytes(count);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(engine() >> 56);
  return bytes;
}

Hash128 reference(const void* data, std::size_t len) {
  const XXH128_hash_t h = XXH3_128bits(data, len);
  return Hash128{h.low64, h.high64};
}

std::string describe(const Hash128& h) {
  char text[40];
  std::snprintf(text, sizeof text, "%016llx:%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return text;
}

// Compares at every length in `lengths`, hashing bytes starting `offset` bytes into the buffer;
// reports the first mismatch only (a broken branch would otherwise print thousands).
void check_lengths(const std::vector<std::uint8_t>& buffer, std::size_t offset,
                   const std::vector<std::size_t>& lengths) {
  for (std::size_t len : lengths) {
    const std::uint8_t* p = buffer.data() + offset;
    const Hash128 expected = reference(p, len);
    const Hash128 actual = xxh3_128(p, len);
    if (actual != expected) {
      INFO("length " << len << ", offset " << offset << ": portable " << describe(actual)
                     << ", libxxhash " << describe(expected));
      CHECK(actual == expected);
      return;
    }
  }
  SUCCEED();
}

std::vector<std::size_t> lengths_up_to(std::size_t last) {
  std::vector<std::size_t> lengths;
  for (std::size_t len = 0; len <= last; ++len) lengths.push_back(len);
  return lengths;
}

// Boundaries of the long path: 240/241 (mid-size to long), multiples of the 64-byte stripe and
// the 1 KiB block +-1 (the `(len - 1) / 1024` rule and the overlapping last stripe), the 64 KiB
// digest chunk, and a sweep of odd lengths in between.
std::vector<std::size_t> long_lengths() {
  std::vector<std::size_t> lengths = {
      239, 240, 241, 242, 255, 256, 257, 65535, 65536, 65537, kMaxLength - 1, kMaxLength};
  for (std::size_t k = 1; k * 1024 + 1 <= kMaxLength; ++k) {
    for (std::size_t len : {k * 1024 - 1, k * 1024, k * 1024 + 1, k * 1024 + 64, k * 1024 + 960}) {
      // Within the buffer: k * 1024 + 960 passes kMaxLength for the last k (ASan caught both
      // hashes reading past the buffer, equal only by luck).
      if (len <= kMaxLength) lengths.push_back(len);
    }
  }
  for (std::size_t len = 2049; len <= kMaxLength; len += 997) lengths.push_back(len);
  return lengths;
}

}  // namespace

TEST_CASE("xxh3_128 equals libxxhash XXH3_128bits at every length 0..2048", "[core][xxh3]") {
  const auto buffer = random_bytes(2048 + 8, 20240611);
  check_lengths(buffer, 0, lengths_up_to(2048));
}

TEST_CASE("xxh3_128 equals libxxhash on unaligned input at every length 0..2048", "[core][xxh3]") {
  const auto buffer = random_bytes(2048 + 8, 7);
  for (std::size_t offset : {1, 3, 5, 7}) check_lengths(buffer, offset, lengths_up_to(2048));
}

TEST_CASE("xxh3_128 equals libxxhash on long inputs up to 70000 bytes", "[core][xxh3]") {
  const auto buffer = random_bytes(kMaxLength + 8, 99);
  for (std::size_t offset : {0, 1, 4}) check_lengths(buffer, offset, long_lengths());
}

TEST_CASE("xxh3_128 equals libxxhash on structured bytes (zeros, ones, a ramp)", "[core][xxh3]") {
  // Zeros exercise the multiply-by-zero guards; all-ones the carries of the 128-bit products.
  std::vector<std::size_t> lengths = lengths_up_to(300);
  for (std::size_t len : {1023u, 1024u, 1025u, 4096u, 65536u}) lengths.push_back(len);
  for (std::uint8_t fill : {std::uint8_t{0x00}, std::uint8_t{0xFF}}) {
    check_lengths(std::vector<std::uint8_t>(65536, fill), 0, lengths);
  }
  std::vector<std::uint8_t> ramp(65536);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<std::uint8_t>(i);
  check_lengths(ramp, 0, lengths);
}

TEST_CASE("xxh3_128 of the empty input matches the published value", "[core][xxh3]") {
  // XXH3_128bits("", 0) with seed 0 is 99aa06d3014798d86001c324468d497f (xxHash's sanity table).
  const Hash128 h = xxh3_128(nullptr, 0);
  CHECK(h.high64 == 0x99aa06d3014798d8ull);
  CHECK(h.low64 == 0x6001c324468d497full);
}

TEST_CASE("the portable 64x64->128 multiply equals 128-bit integer arithmetic", "[core][xxh3]") {
  // The device uses __umul64hi and the host __int128 where available; the schoolbook form is the
  // fallback elsewhere, so it is checked on its own, including the carry-heavy extremes.
  std::mt19937_64 engine(3);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> cases = {
      {0, 0}, {~0ull, ~0ull}, {~0ull, 1}, {0xFFFFFFFFull, 0xFFFFFFFFull}, {1ull << 63, 2}};
  for (int i = 0; i < 10000; ++i) cases.emplace_back(engine(), engine());
  for (const auto& [a, b] : cases) {
    __extension__ using U128 = unsigned __int128;
    const U128 product = static_cast<U128>(a) * b;
    const Hash128 r = ra::xxh3::detail::mult64to128_portable(a, b);
    if (r.low64 != static_cast<std::uint64_t>(product) ||
        r.high64 != static_cast<std::uint64_t>(product >> 64)) {
      INFO(a << " * " << b);
      FAIL("portable product differs");
    }
  }
  SUCCEED();
}

TEST_CASE("secret words read at every byte offset equal the secret's bytes", "[core][xxh3]") {
  // The word table with its shift funnel (the device's code path too) against byte-by-byte
  // little-endian assembly, at all 185 offsets an 8-byte read can start from.
  namespace d = ra::xxh3::detail;
  for (std::size_t offset = 0; offset + 8 <= d::kSecretBytes; ++offset) {
    std::uint64_t expected = 0;
    for (std::size_t b = 8; b-- > 0;) expected = expected << 8 | d::kSecretByteList[offset + b];
    INFO("offset " << offset);
    REQUIRE(d::secret64(offset) == expected);
  }
}

TEST_CASE("the long hash split by lane and stripe group equals libxxhash", "[core][xxh3]") {
  // The decomposition the GPU's warp-per-chunk kernel runs (kernels/digest.cu): every length
  // past the mid-size path up to two blocks, then around the block and chunk boundaries, aligned
  // and at an odd offset.
  const std::vector<std::uint8_t> bytes = random_bytes(kMaxLength + 1, 11);
  std::vector<std::size_t> lengths;
  for (std::size_t len = 241; len <= 2100; ++len) lengths.push_back(len);
  for (std::size_t len : {4095u, 4096u, 4097u, 65535u, 65536u, 65537u, 69999u, 70000u}) {
    lengths.push_back(len);
  }
  for (std::size_t offset : {0u, 1u}) {
    for (std::size_t len : lengths) {
      const auto got = ra::xxh3::detail::hash_long_by_lanes(bytes.data() + offset, len);
      const Hash128 want = reference(bytes.data() + offset, len);
      if (got != want) {
        FAIL("length " << len << " offset " << offset << ": " << describe(got)
                       << " != " << describe(want));
      }
    }
  }
}
