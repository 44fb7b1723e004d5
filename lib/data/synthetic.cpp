#include "data/synthetic.h"

#include <algorithm>
#include <string>

#include "rng/philox.h"
#include "rng/stream.h"

namespace ra::data {
namespace {

// Draw indices (the Philox `b` coordinate) of the two parts of a random set.
constexpr std::uint64_t kPixelDraw = 0;
constexpr std::uint64_t kLabelDraw = 1;

Dataset empty_set(const spec::DatasetSpec& spec, std::int64_t count, std::string_view role) {
  Dataset set;
  set.role = std::string(role);
  set.sample_shape = spec.shape;
  set.classes = spec.classes;
  set.images.resize(static_cast<std::size_t>(count * set.sample_elements()));
  set.labels.resize(static_cast<std::size_t>(count));
  return set;
}

}  // namespace

Dataset make_random_dataset(const spec::DatasetSpec& spec, std::int64_t count, float scale,
                            std::string_view role) {
  Dataset set = empty_set(spec, count, role);
  const rng::PhiloxKey key =
      rng::derive_key(spec.seed, std::string(rng::kSyntheticDataStream) + "/" + std::string(role));

  // Word k lives in block k / 4 at lane k % 4 (rng::philox_word); one block serves four pixels.
  const std::uint64_t pixels = set.images.size();
  for (std::uint64_t k = 0; k < pixels; k += 4) {
    const rng::PhiloxBlock block = rng::philox_block(key, k >> 2, kPixelDraw);
    for (std::uint64_t lane = 0; lane < 4 && k + lane < pixels; ++lane) {
      set.images[k + lane] = rng::uniform_from_bits(block.v[lane]) * scale;
    }
  }
  // Label i takes words 2i (low half) and 2i + 1 (high half): lanes 0-1 or 2-3 of block i / 2.
  const auto classes = static_cast<std::uint64_t>(spec.classes);
  for (std::uint64_t i = 0; i < set.labels.size(); ++i) {
    const rng::PhiloxBlock block = rng::philox_block(key, i >> 1, kLabelDraw);
    const std::uint64_t lane = 2 * (i & 1);
    const std::uint64_t random64 =
        std::uint64_t{block.v[lane]} | (std::uint64_t{block.v[lane + 1]} << 32);
    set.labels[i] = static_cast<std::int32_t>(rng::uniform_below(random64, classes));
  }
  return set;
}

Dataset make_constant_dataset(const spec::DatasetSpec& spec, std::int64_t count, float scale,
                              std::string_view role) {
  Dataset set = empty_set(spec, count, role);
  std::fill(set.images.begin(), set.images.end(), spec.value * scale);
  for (std::int64_t i = 0; i < count; ++i) {
    set.labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % spec.classes);
  }
  return set;
}

}  // namespace ra::data
