#include <catch2/catch.hpp>

#include <bit>
#include <cstring>

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
