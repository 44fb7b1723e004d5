// Data augmentation (data/augment.h): shifts (whole and fractional, zero and nearest fill) and
// flips by hand, each sample's draw a pure function
// of (key, epoch, position) within its documented range, and batches that stay bit for bit the
// same with any number of loader workers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "data/augment.h"
#include "data/loader.h"
#include "rng/stream.h"

using namespace ra::data;

TEST_CASE("a sample transform shifts with zeros, then flips", "[data][augment]") {
  // One channel of 3x4: value 10 * row + column + 1 (no zeros, so a zero is a filled cell).
  std::vector<float> image(12);
  for (int i = 0; i < 12; ++i) image[std::size_t(i)] = float(10 * (i / 4) + i % 4 + 1);
  const std::vector<float> original = image;
  std::vector<float> scratch;
  // Down one row, left one column: out(y, x) = in(y - 1, x + 1).
  apply_transform({1, -1, false}, {1, 3, 4}, image.data(), scratch);
  CHECK(image == std::vector<float>{0, 0, 0, 0, 2, 3, 4, 0, 12, 13, 14, 0});
  // Flipped only: each row reversed.
  image = original;
  apply_transform({0, 0, true}, {1, 3, 4}, image.data(), scratch);
  CHECK(image == std::vector<float>{4, 3, 2, 1, 14, 13, 12, 11, 24, 23, 22, 21});
  // Shifted right by one, then flipped: out(y, x) = in(y, (3 - x) - 1).
  image = original;
  apply_transform({0, 1, true}, {1, 3, 4}, image.data(), scratch);
  CHECK(image == std::vector<float>{3, 2, 1, 0, 13, 12, 11, 0, 23, 22, 21, 0});
}

TEST_CASE("each sample's draw is a pure function of key, epoch and position", "[data][augment]") {
  const Augmentation a{3, true, ra::rng::derive_key(5, ra::rng::kDataAugmentStream)};
  std::set<int> shifts;
  int flips = 0;
  for (std::int64_t position = 0; position < 2000; ++position) {
    const SampleTransform t = sample_transform(a, {1, 8, 8}, 1, position);
    const SampleTransform again = sample_transform(a, {1, 8, 8}, 1, position);
    REQUIRE((t.dy == again.dy && t.dx == again.dx && t.flip == again.flip));
    REQUIRE((t.dy >= -3 && t.dy <= 3 && t.dx >= -3 && t.dx <= 3));
    shifts.insert(static_cast<int>(t.dx));
    flips += t.flip ? 1 : 0;
  }
  CHECK(shifts.size() == 7);  // every shift of [-3, 3] drawn in 2000 samples
  CHECK((flips > 800 && flips < 1200));
  // Without shift or flip asked for, nothing is drawn that changes a sample.
  const SampleTransform none = sample_transform({0, false, a.key}, {1, 8, 8}, 1, 7);
  CHECK((none.dy == 0 && none.dx == 0 && !none.flip));
}

TEST_CASE("augmented batches are the same with 0 and 3 loader workers", "[data][augment]") {
  Dataset data;
  data.role = "train";
  data.sample_shape = {2, 6, 6};
  data.classes = 10;
  for (std::int64_t i = 0; i < 100; ++i) {
    for (std::int64_t k = 0; k < 72; ++k) data.images.push_back(float(i * 100 + k + 1));
    data.labels.push_back(std::int32_t(i % 10));
  }
  const auto order_key = ra::rng::derive_key(7, ra::rng::kDataOrderStream);
  const Augmentation augmentation{2, true, ra::rng::derive_key(7, ra::rng::kDataAugmentStream)};
  std::vector<std::vector<float>> images[2];
  for (const int workers : {0, 3}) {
    BatchLoader loader(data, 16, true, false, order_key, workers);
    loader.set_augmentation(augmentation);
    loader.start_epoch(1);
    Batch batch;
    while (loader.next(batch)) {
      images[workers == 0 ? 0 : 1].emplace_back(batch.images.begin(), batch.images.end());
    }
  }
  REQUIRE(images[0].size() == 7);
  REQUIRE(images[0] == images[1]);
  // And the augmentation did something: some sample's first plane holds a filled zero.
  bool zero_seen = false;
  for (const auto& batch : images[0]) {
    for (const float v : batch) zero_seen = zero_seen || v == 0.0f;
  }
  CHECK(zero_seen);
}

TEST_CASE("a whole shift with fill_mode nearest repeats the edge cells", "[data][augment]") {
  std::vector<float> image(12);
  for (int i = 0; i < 12; ++i) image[std::size_t(i)] = float(10 * (i / 4) + i % 4 + 1);
  std::vector<float> scratch;
  // Down one row, left one column: out(y, x) = in(max(y - 1, 0), min(x + 1, 3)).
  apply_transform({1, -1, false, true}, {1, 3, 4}, image.data(), scratch);
  CHECK(image == std::vector<float>{2, 3, 4, 4, 2, 3, 4, 4, 12, 13, 14, 14});
}

TEST_CASE("a fractional shift interpolates bilinearly, filled with zeros or the edge",
          "[data][augment]") {
  // One channel of 2x3: 1 2 3 / 4 5 6.
  const std::vector<float> original{1, 2, 3, 4, 5, 6};
  std::vector<float> image = original, scratch;
  // Down half a row: out(y, x) = (in(y - 1, x) + in(y, x)) / 2, row -1 being 0.
  apply_transform({0.5, 0, false}, {1, 2, 3}, image.data(), scratch);
  CHECK(image == std::vector<float>{0.5f, 1.0f, 1.5f, 2.5f, 3.5f, 4.5f});
  // ... the edge row repeated instead: row -1 is row 0.
  image = original;
  apply_transform({0.5, 0, false, true}, {1, 2, 3}, image.data(), scratch);
  CHECK(image == std::vector<float>{1.0f, 2.0f, 3.0f, 2.5f, 3.5f, 4.5f});
  // Left a quarter column, then flipped: out(y, x) = in(y, 2 - x + 0.25), column 3 clamped to 2.
  image = original;
  apply_transform({0, -0.25, true, true}, {1, 2, 3}, image.data(), scratch);
  CHECK(image == std::vector<float>{3.0f, 2.25f, 1.25f, 6.0f, 5.25f, 4.25f});
  // Both axes: in(0.75, 1.5) = 0.25 (0.5 * 2 + 0.5 * 3) + 0.75 (0.5 * 5 + 0.5 * 6), in double.
  image = original;
  apply_transform({-0.75, -1.5, false, true}, {1, 2, 3}, image.data(), scratch);
  CHECK(image[0] == static_cast<float>(0.25 * (0.5 * 2 + 0.5 * 3) + 0.75 * (0.5 * 5 + 0.5 * 6)));
}

TEST_CASE("fractional shifts are drawn up to range times size each way", "[data][augment]") {
  Augmentation a;
  a.key = ra::rng::derive_key(9, ra::rng::kDataAugmentStream);
  a.width_range = 0.1f;
  a.height_range = 0.25f;
  a.fill_nearest = true;
  double sum = 0, largest = 0;
  int negative = 0, whole = 0;
  for (std::int64_t position = 0; position < 2000; ++position) {
    const SampleTransform t = sample_transform(a, {3, 8, 32}, 0, position);
    // Keras' width_shift_range 0.1 of 32 columns: up to 3.2 pixels each way.
    REQUIRE((t.dx >= -0.1f * 32.0 && t.dx < 0.1f * 32.0));
    REQUIRE((t.dy >= -0.25f * 8.0 && t.dy < 0.25f * 8.0));
    REQUIRE(t.fill_nearest);
    REQUIRE_FALSE(t.flip);
    sum += t.dx;
    largest = std::max(largest, std::abs(t.dx));
    negative += t.dx < 0 ? 1 : 0;
    whole += t.dx == static_cast<double>(static_cast<int>(t.dx)) ? 1 : 0;
  }
  CHECK(std::abs(sum / 2000) < 0.2);  // centred on 0
  CHECK(largest > 3.0);               // reaching the range's ends
  CHECK((negative > 800 && negative < 1200));
  CHECK(whole == 0);  // real shifts, not whole pixels
}
