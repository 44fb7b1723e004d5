#include <numeric>
#include <utility>

#include "data/loader.h"
#include "rng/stream.h"

namespace ra::data {

std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, rng::PhiloxKey order_key,
                                      std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!shuffle) return order;
  const auto draw = static_cast<std::uint64_t>(epoch);
  for (std::int64_t j = n - 1; j >= 1; --j) {
    // Words 2j and 2j + 1 are lanes 0-1 (j even) or 2-3 (j odd) of block j / 2: one Philox block
    // per two elements instead of the two that philox_word calls would compute.
    const auto uj = static_cast<std::uint64_t>(j);
    const rng::PhiloxBlock block = rng::philox_block(order_key, uj >> 1, draw);
    const std::uint64_t lane = 2 * (uj & 1);
    const std::uint64_t random64 =
        std::uint64_t{block.v[lane]} | (std::uint64_t{block.v[lane + 1]} << 32);
    const auto pick = static_cast<std::int64_t>(rng::uniform_below(random64, uj + 1));
    std::swap(order[static_cast<std::size_t>(j)], order[static_cast<std::size_t>(pick)]);
  }
  return order;
}

}  // namespace ra::data
