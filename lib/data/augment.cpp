#include "data/augment.h"

#include <algorithm>
#include <cmath>

#include "rng/stream.h"

namespace ra::data {
namespace {

// A whole shift in [-shift, shift] from one word, or a real one in [-range * size, range * size).
double drawn_shift(std::uint32_t word, int shift, float range, std::int64_t size) {
  if (shift > 0) {
    const auto span = static_cast<std::uint64_t>(2 * shift + 1);
    return static_cast<double>(rng::uniform_below(std::uint64_t(word) << 32, span)) - shift;
  }
  if (range <= 0.0f) return 0.0;
  const double u = std::ldexp(static_cast<double>(word), -32);  // exact: [0, 1) in steps of 2^-32
  return (2.0 * u - 1.0) * static_cast<double>(range) * static_cast<double>(size);
}

// One plane [h, w] from `in` into `out` under t (see apply_transform).
void transform_plane(const SampleTransform& t, std::int64_t h, std::int64_t w, const float* in,
                     float* out) {
  const auto cell = [&](std::int64_t y, std::int64_t x) -> double {
    if (t.fill_nearest) {
      y = std::clamp<std::int64_t>(y, 0, h - 1);
      x = std::clamp<std::int64_t>(x, 0, w - 1);
    } else if (y < 0 || y >= h || x < 0 || x >= w) {
      return 0.0;
    }
    return in[y * w + x];
  };
  const bool whole = t.dy == std::floor(t.dy) && t.dx == std::floor(t.dx);
  for (std::int64_t y = 0; y < h; ++y) {
    for (std::int64_t x = 0; x < w; ++x) {
      const double sy = static_cast<double>(y) - t.dy;
      const double sx = static_cast<double>(t.flip ? w - 1 - x : x) - t.dx;
      if (whole) {  // a copy: the pixel's own bits, or the fill
        out[y * w + x] =
            static_cast<float>(cell(static_cast<std::int64_t>(sy), static_cast<std::int64_t>(sx)));
        continue;
      }
      const double fy = std::floor(sy), fx = std::floor(sx);
      const double a = sy - fy, b = sx - fx;
      const auto y0 = static_cast<std::int64_t>(fy), x0 = static_cast<std::int64_t>(fx);
      out[y * w + x] =
          static_cast<float>((1.0 - a) * ((1.0 - b) * cell(y0, x0) + b * cell(y0, x0 + 1)) +
                             a * ((1.0 - b) * cell(y0 + 1, x0) + b * cell(y0 + 1, x0 + 1)));
    }
  }
}

}  // namespace

SampleTransform sample_transform(const Augmentation& a, const Shape& sample_shape,
                                 std::int64_t epoch, std::int64_t position) {
  const rng::PhiloxBlock block = rng::philox_block(a.key, static_cast<std::uint64_t>(position),
                                                   static_cast<std::uint64_t>(epoch));
  SampleTransform t;
  t.dy = drawn_shift(block.v[0], a.shift, a.height_range, sample_shape[1]);
  t.dx = drawn_shift(block.v[1], a.shift, a.width_range, sample_shape[2]);
  t.flip = a.flip && (block.v[2] >> 31) != 0;
  t.fill_nearest = a.fill_nearest;
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
    transform_plane(t, h, w, scratch.data(), plane);
  }
}

}  // namespace ra::data
