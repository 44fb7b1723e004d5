#include <catch2/catch.hpp>

#include <xxhash.h>
#include <bit>
#include <cstring>
#include <string>

#include "core/digest.h"
#include "core/error.h"

TEST_CASE("tensor digests see every bit, the shape and the dtype", "[core]") {
  ra::Tensor a({2, 3}, 1.5f);
  const ra::Digest128 base = ra::digest(a);
  REQUIRE(base == ra::digest(ra::Tensor({2, 3}, 1.5f)));

  ra::Tensor flipped = a;
  flipped[4] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(flipped[4]) ^ 1u);  // lowest bit
  REQUIRE(ra::digest(flipped) != base);

  ra::Tensor reshaped = a;
  reshaped.reshape({3, 2});
  REQUIRE(ra::digest(reshaped) != base);  // same bytes, other shape

  ra::Tensor negative_zero({1}, -0.0f), positive_zero({1}, 0.0f);
  REQUIRE(ra::digest(negative_zero) != ra::digest(positive_zero));  // bits, not values

  std::int32_t ints[6];
  std::memcpy(ints, a.data(), sizeof ints);
  REQUIRE(ra::digest_bytes(ra::DType::i32, {2, 3}, ints, sizeof ints) != base);  // dtype counts
}

TEST_CASE("digest hex round-trips and rejects malformed text", "[core]") {
  const ra::Digest128 d{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  REQUIRE(d.hex() == "0123456789abcdeffedcba9876543210");
  REQUIRE(ra::Digest128::from_hex(d.hex()) == d);
  REQUIRE_THROWS_AS(ra::Digest128::from_hex("0123"), ra::InputError);
  REQUIRE_THROWS_AS(ra::Digest128::from_hex(std::string(32, 'g')), ra::InputError);
}

TEST_CASE("tensor shape helpers", "[core]") {
  REQUIRE(ra::element_count({2, 3, 4}) == 24);
  REQUIRE(ra::element_count({}) == 1);
  REQUIRE(ra::to_string({128, 1, 28, 28}) == "[128, 1, 28, 28]");
  ra::Tensor t({4});
  REQUIRE_THROWS_AS(t.reshape({5}), std::logic_error);
  t.resize({2, 2});
  REQUIRE(t.shape() == ra::Shape{2, 2});
}

TEST_CASE("the digest is XXH3-128 over the header and per-chunk XXH3-128 digests", "[core]") {
  // An independent recomputation of the documented definition (docs/trace-format.md) with the
  // xxHash library directly, across the chunk boundary.
  for (std::size_t floats : {0, 1, 100, 16384, 16385, 40000}) {
    ra::Tensor t({static_cast<std::int64_t>(floats)});
    for (std::size_t i = 0; i < floats; ++i) t[i] = static_cast<float>(i) * 0.5f - 3.0f;
    std::string message;
    message.push_back(1);  // f32
    const std::uint64_t rank = 1;
    const std::int64_t dim = static_cast<std::int64_t>(floats);
    message.append(reinterpret_cast<const char*>(&rank), 8);
    message.append(reinterpret_cast<const char*>(&dim), 8);
    const auto* bytes = reinterpret_cast<const unsigned char*>(t.data());
    for (std::size_t at = 0; at < t.bytes(); at += 65536) {
      const XXH128_hash_t h =
          XXH3_128bits(bytes + at, std::min<std::size_t>(65536, t.bytes() - at));
      message.append(reinterpret_cast<const char*>(&h.low64), 8);
      message.append(reinterpret_cast<const char*>(&h.high64), 8);
    }
    const XXH128_hash_t expected = XXH3_128bits(message.data(), message.size());
    INFO(floats << " floats");
    REQUIRE(ra::digest(t) == ra::Digest128{expected.high64, expected.low64});
  }
}
