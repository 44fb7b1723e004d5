#pragma once
// Data augmentation as Keras' CIFAR-10 example does it: each training sample shifted by a whole
// number of pixels (the vacated cells zero) and flipped left to right at random. Every draw comes
// from the run's "data/augment" stream (rng/stream.h), keyed by its own seed (--vary augment) and
// counted by (epoch, the sample's position in the epoch): a pure function of those, whatever the
// worker threads, so batches stay a function of (data, order, augmentation, epoch, index).
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "rng/philox.h"

namespace ra::data {

struct Augmentation {
  int shift = 0;       // at most this many pixels each way, per axis (0: no shift)
  bool flip = false;   // left-right flips, each sample with probability 1/2
  rng::PhiloxKey key;  // of the "data/augment" stream
  bool active() const { return shift > 0 || flip; }
};

// What one sample's draw decides. Words w0, w1, w2 of Philox(key, counter = position, draw =
// epoch): dy = uniform_below(w0, 2 shift + 1) - shift, dx likewise from w1, flip = w2's top bit.
struct SampleTransform {
  int dy = 0, dx = 0;
  bool flip = false;
};
SampleTransform sample_transform(const Augmentation& a, std::int64_t epoch, std::int64_t position);

// The image [C, H, W] at `image`, in place: out(c, y, x) = in(c, y - dy, x' - dx) where x' is x,
// or W - 1 - x when flipped (the flip applied after the shift), 0 where that falls outside.
// `scratch` is reused (one plane).
void apply_transform(const SampleTransform& t, const Shape& sample_shape, float* image,
                     std::vector<float>& scratch);

}  // namespace ra::data
