// philox_blocks (vectorised, cloned per instruction set) against philox_block, word for word.
#include <catch2/catch.hpp>
#include <vector>

#include "rng/philox_batch.h"

using namespace ra::rng;

TEST_CASE("philox_blocks gives the words of philox_block for every block", "[rng][philox]") {
  const PhiloxKey keys[] = {{0, 0}, {0x243F6A88u, 0x85A308D3u}, {0xFFFFFFFFu, 0xFFFFFFFFu}};
  // Starts that cross the carry from the low to the high counter word.
  const std::uint64_t firsts[] = {0, 1, 0xFFFFFFF0ull, 0xFFFFFFFFull, 0x123456789ABCDEFull};
  const std::uint64_t draws[] = {0, 7, 0xFFFFFFFFull + 3};
  for (const PhiloxKey& key : keys) {
    for (const std::uint64_t first : firsts) {
      for (const std::uint64_t draw : draws) {
        for (const std::int64_t blocks : {1, 15, 16, 17, 33, 256}) {
          std::vector<std::uint32_t> words(static_cast<std::size_t>(4 * blocks), 0xDEADBEEFu);
          philox_blocks(key, first, draw, blocks, words.data());
          for (std::int64_t i = 0; i < blocks; ++i) {
            const PhiloxBlock expected = philox_block(key, first + std::uint64_t(i), draw);
            for (int j = 0; j < 4; ++j) {
              INFO("first " << first << " draw " << draw << " block " << i << " word " << j);
              REQUIRE(words[std::size_t(4 * i + j)] == expected.v[j]);
            }
          }
        }
      }
    }
  }
}
