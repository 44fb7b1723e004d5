#include "data/augment.h"

#include <algorithm>

#include "rng/stream.h"

namespace ra::data {

SampleTransform sample_transform(const Augmentation& a, std::int64_t epoch, std::int64_t position) {
  const rng::PhiloxBlock block = rng::philox_block(a.key, static_cast<std::uint64_t>(position),
                                                   static_cast<std::uint64_t>(epoch));
  SampleTransform t;
  if (a.shift > 0) {
    const auto span = static_cast<std::uint64_t>(2 * a.shift + 1);
    t.dy = static_cast<int>(rng::uniform_below(std::uint64_t(block.v[0]) << 32, span)) - a.shift;
    t.dx = static_cast<int>(rng::uniform_below(std::uint64_t(block.v[1]) << 32, span)) - a.shift;
  }
  t.flip = a.flip && (block.v[2] >> 31) != 0;
  return t;
}

void apply_transform(const SampleTransform& t, const Shape& sample_shape, float* image,
                     std::vector<float>& scratch) {
  if (t.dy == 0 && t.dx == 0 && !t.flip) return;
  const std::int64_t channels = sample_shape[0], h = sample_shape[1], w = sample_shape[2];
  scratch.resize(static_cast<std::size_t>(h * w));
  for (std::int64_t c = 0; c < channels; ++c) {
    float* plane = image + c * h * w;
    std::copy(plane, plane + h * w, scratch.begin());
    for (std::int64_t y = 0; y < h; ++y) {
      for (std::int64_t x = 0; x < w; ++x) {
        const std::int64_t sx = (t.flip ? w - 1 - x : x) - t.dx, sy = y - t.dy;
        const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
        plane[y * w + x] = inside ? scratch[static_cast<std::size_t>(sy * w + sx)] : 0.0f;
      }
    }
  }
}

}  // namespace ra::data
