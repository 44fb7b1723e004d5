#pragma once
// Data augmentation as Keras' CIFAR-10 examples do it: each training sample shifted, by a whole
// number of pixels (`shift`) or, as Keras' ImageDataGenerator(width_shift_range=0.1, ...), by a
// real number of pixels up to a fraction of its size, interpolated bilinearly (its affine
// transform of order 1), the vacated cells zero or the nearest edge pixel (fill_mode 'nearest');
// then flipped left to right at random. Every draw comes from the run's "data/augment" stream
// (rng/stream.h), keyed by its own seed (--vary augment) and counted by (epoch, the sample's
// position in the epoch): a pure function of those, whatever the worker threads, so batches stay
// a function of (data, order, augmentation, epoch, index). Keras' draws come from NumPy's global
// generator: the distributions are Keras', the draws are not.
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "rng/philox.h"

namespace ra::data {

struct Augmentation {
  int shift = 0;       // at most this many pixels each way, per axis (0: no shift)
  bool flip = false;   // left-right flips, each sample with probability 1/2
  rng::PhiloxKey key;  // of the "data/augment" stream
  float width_range =
      0.0f;  // at most this fraction of the width each way (0: none); not with shift
  float height_range = 0.0f;  // of the height
  bool fill_nearest = false;  // vacated cells take the nearest edge pixel, not 0
  bool active() const { return shift > 0 || flip || width_range > 0.0f || height_range > 0.0f; }
};

// What one sample's draw decides. Words w0, w1, w2 of Philox(key, counter = position, draw =
// epoch): whole shifts dy = uniform_below(w0, 2 shift + 1) - shift, dx likewise from w1;
// fractional ones dy = (2 u0 - 1) * height_range * H with u0 = w0 / 2^32 (in [-r H, r H), computed
// in double), dx from w1 with the width; flip = w2's top bit.
struct SampleTransform {
  double dy = 0, dx = 0;
  bool flip = false;
  bool fill_nearest = false;
};
SampleTransform sample_transform(const Augmentation& a, const Shape& sample_shape,
                                 std::int64_t epoch, std::int64_t position);

// The image [C, H, W] at `image`, in place: out(c, y, x) = in(c, y - dy, x' - dx) where x' is x,
// or W - 1 - x when flipped (the flip applied after the shift). Whole shifts copy pixels; a
// fractional one interpolates the 2 x 2 cells around that point bilinearly, in double:
// (1 - a) ((1 - b) p00 + b p01) + a ((1 - b) p10 + b p11), a and b the fractional parts of the
// row and column. Cells outside the image are 0, or with fill_nearest the nearest edge cell (the
// row and column clamped, as SciPy's mode 'nearest' that Keras uses). `scratch` is reused.
void apply_transform(const SampleTransform& t, const Shape& sample_shape, float* image,
                     std::vector<float>& scratch);

}  // namespace ra::data
