#pragma once
// One data set held in memory as fp32 images (already scaled) and int32 labels. Loaded once per
// audit and shared read-only by every run, so runs cannot differ by what they read from disk.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "spec/spec.h"

namespace ra::data {

struct Dataset {
  std::string role;    // "train" or "eval"
  std::string source;  // where the samples come from: the labels file, or "the train random set"
  Shape sample_shape;  // [C, H, W]
  int classes = 0;
  std::vector<float> images;  // size() * sample_elements() values, already multiplied by scale
  std::vector<std::int32_t> labels;  // in [0, classes)
  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
  std::int64_t sample_elements() const { return element_count(sample_shape); }
};

// Loads (idx) or generates (random, constant) one set, keeps its first `spec.limit` samples (0 =
// all; a limit above the set's size is an InputError) and multiplies every pixel by `scale`.
//
// idx: images file of dims [N, H, W] -> sample_shape [1, H, W], or [N, C, H, W] -> [C, H, W];
//   labels file [N], N must match. classes = 10 unless a label >= 10 occurs in the labels file
//   (then max label + 1), judged over the whole file so that `limit` cannot change the model's
//   output width. Paths are used as given (the spec loader has resolved them).
// random: Philox key rng::derive_key(spec.seed, "data/synthetic/" + role). Counter layout
//   (part of the trace contract: changing it changes every synthetic set):
//     pixel k of the flattened set (k = sample * sample_elements + element):
//       uniform_from_bits(philox_word(key, k, /*draw*/ 0))          in [0, 1), times scale
//     label of sample i: uniform_below(lo | hi << 32, classes) with
//       lo = philox_word(key, 2i, /*draw*/ 1), hi = philox_word(key, 2i + 1, /*draw*/ 1)
//   so sample i is the same whatever the limit, run seed or thread count.
// constant: every pixel = spec.value * scale; label of sample i = i % classes.
// idx files are checked by their headers before their data is read: dims, labels count, `limit`
// and, when `expected_sample_shape` is not empty (the model's input), the sample shape.
// Errors name the file (idx) or the JSON path "data.<role>.<field>" (limit, samples, shape, ...).
Dataset load_dataset(const spec::DatasetSpec& spec, float scale, std::string_view role,
                     const Shape& expected_sample_shape = {});

// Every label of `set` in [0, classes) (the width of the model's output), or InputError naming
// the first one outside by its index in the data set and its file: "data.train: label 12 of
// sample 3041 in .../train-labels-idx1-ubyte.gz is outside the model's 10 classes (0..9)". The
// loss would otherwise meet it in some batch, many steps in, and could name only its batch row.
void check_labels(const Dataset& set, int classes);

// That every data file the spec names can be opened for reading (a regular file, there, readable):
// ValidationError listing each that cannot, by its spec key ("data.train.images: /nope/x.gz: cannot
// open (No such file or directory)"). `validate` checks it; loading says the same key.
void check_data_files(const spec::DataSpec& data);

}  // namespace ra::data
