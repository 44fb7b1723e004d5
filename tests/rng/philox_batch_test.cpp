// philox_blocks (vectorised, one unit per instruction set) against philox_block, word for word,
// on every path this CPU runs: the public entry takes only the widest, so an AVX-512 host would
// otherwise never test the AVX2 path.
#include <catch2/catch.hpp>
#include <vector>

#include "rng/philox_batch.h"
#include "rng/philox_batch_detail.h"

using namespace ra::rng;
using namespace ra::rng::philox_detail;

namespace {

std::vector<PhiloxPath> supported_paths() {
  std::vector<PhiloxPath> paths;
  for (const PhiloxPath path : kAllPhiloxPaths) {
    if (philox_path_supported(path)) paths.push_back(path);
  }
  return paths;
}

// Calls check(key, first, draw, blocks) for keys, starts and draws that cross word carries, and
// block counts around the 8- and 16-lane groups.
template <class Check>
void for_each_case(const Check& check) {
  const PhiloxKey keys[] = {{0, 0}, {0x243F6A88u, 0x85A308D3u}, {0xFFFFFFFFu, 0xFFFFFFFFu}};
  // Starts that cross the carry from the low to the high counter word.
  const std::uint64_t firsts[] = {0, 1, 0xFFFFFFF0ull, 0xFFFFFFFFull, 0x123456789ABCDEFull};
  const std::uint64_t draws[] = {0, 7, 0xFFFFFFFFull + 3};
  for (const PhiloxKey& key : keys) {
    for (const std::uint64_t first : firsts) {
      for (const std::uint64_t draw : draws) {
        for (const std::int64_t blocks : {1, 7, 8, 9, 15, 16, 17, 33, 256}) {
          check(key, first, draw, blocks);
        }
      }
    }
  }
}

void require_philox_words(const std::vector<std::uint32_t>& words, PhiloxKey key,
                          std::uint64_t first, std::uint64_t draw, std::int64_t blocks) {
  for (std::int64_t i = 0; i < blocks; ++i) {
    const PhiloxBlock expected = philox_block(key, first + std::uint64_t(i), draw);
    for (int j = 0; j < 4; ++j) {
      INFO("first " << first << " draw " << draw << " blocks " << blocks << " block " << i
                    << " word " << j);
      REQUIRE(words[std::size_t(4 * i + j)] == expected.v[j]);
    }
  }
}

}  // namespace

TEST_CASE("philox_blocks gives the words of philox_block for every block", "[rng][philox]") {
  for_each_case([](PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks) {
    std::vector<std::uint32_t> words(static_cast<std::size_t>(4 * blocks), 0xDEADBEEFu);
    philox_blocks(key, first, draw, blocks, words.data());
    require_philox_words(words, key, first, draw, blocks);
  });
}

TEST_CASE("every philox_blocks path this CPU runs gives the words of philox_block",
          "[rng][philox]") {
  const std::vector<PhiloxPath> paths = supported_paths();
  REQUIRE(paths.front() == PhiloxPath::scalar);
  REQUIRE(paths.back() == best_philox_path());
  for (const PhiloxPath path : paths) {
    INFO("path " << philox_path_name(path));
    for_each_case([&](PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks) {
      // One word of slack past the end: a path must not write beyond its blocks.
      std::vector<std::uint32_t> words(static_cast<std::size_t>(4 * blocks + 1), 0xDEADBEEFu);
      philox_blocks_on(path, key, first, draw, blocks, words.data());
      REQUIRE(words.back() == 0xDEADBEEFu);
      words.pop_back();
      require_philox_words(words, key, first, draw, blocks);
    });
  }
}

TEST_CASE("philox_blocks_on refuses a path this CPU cannot run", "[rng][philox]") {
  std::uint32_t words[4 * 16] = {};
  for (const PhiloxPath path : kAllPhiloxPaths) {
    INFO("path " << philox_path_name(path));
    if (philox_path_supported(path)) {
      REQUIRE_NOTHROW(philox_blocks_on(path, PhiloxKey{}, 0, 0, 16, words));
    } else {
      REQUIRE_THROWS(philox_blocks_on(path, PhiloxKey{}, 0, 0, 16, words));
    }
  }
}
