// load_dataset: IDX sets (hand-made and the real Fashion-MNIST), limit and scale, and the
// synthetic random and constant sets.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"
#include "idx_fixtures.h"
#include "rng/philox.h"
#include "rng/stream.h"

using namespace ra::data;
using namespace ra::data::testing;
using Catch::Matchers::Contains;
using ra::spec::DataFormat;
using ra::spec::DatasetSpec;

namespace {

DatasetSpec idx_spec(const std::string& images, const std::string& labels, std::int64_t limit = 0) {
  DatasetSpec s;
  s.format = DataFormat::idx;
  s.images = images;
  s.labels = labels;
  s.limit = limit;
  return s;
}

DatasetSpec random_spec(std::uint64_t seed, std::int64_t samples, ra::Shape shape, int classes) {
  DatasetSpec s;
  s.format = DataFormat::random;
  s.seed = seed;
  s.samples = samples;
  s.shape = std::move(shape);
  s.classes = classes;
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("idx data sets: shape, scale, classes, limit", "[dataset]") {
  TempDir dir;
  // 3 images of 2x2, pixel values chosen so that byte * scale is easy to check by hand.
  const Bytes pixels = {0, 255, 10, 20, /**/ 1, 2, 3, 4, /**/ 100, 200, 50, 25};
  const std::string images = dir.file("images.gz");
  const std::string labels = dir.file("labels");
  write_gz(images, idx_file({3, 2, 2}, pixels));
  write_raw(labels, idx_file({3}, {7, 0, 9}));

  SECTION("[N, H, W] -> [1, H, W], pixels times scale, 10 classes") {
    const Dataset d = load_dataset(idx_spec(images, labels), 0.5f, "train");
    CHECK(d.role == "train");
    CHECK(d.size() == 3);
    CHECK(d.sample_shape == ra::Shape{1, 2, 2});
    CHECK(d.sample_elements() == 4);
    CHECK(d.classes == 10);
    CHECK(d.labels == std::vector<std::int32_t>{7, 0, 9});
    const std::vector<float> expected = {0.0f, 127.5f, 5.0f,  10.0f,  0.5f,  1.0f,
                                         1.5f, 2.0f,   50.0f, 100.0f, 25.0f, 12.5f};
    CHECK(d.images == expected);
  }
  SECTION("scale 1/255 gives the bits of float(byte) * float(1/255)") {
    const float scale = static_cast<float>(1.0 / 255.0);
    const Dataset d = load_dataset(idx_spec(images, labels), scale, "eval");
    CHECK(d.role == "eval");
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      CHECK(d.images[i] == static_cast<float>(pixels[i]) * scale);
    }
    CHECK(d.images[1] == 1.0f);  // 255 * fl(1/255) rounds to exactly 1 in fp32
  }
  SECTION("limit keeps the first samples; above the size is an error naming the limit") {
    const Dataset d = load_dataset(idx_spec(images, labels, 2), 1.0f, "train");
    CHECK(d.size() == 2);
    CHECK(d.images.size() == 8);
    CHECK(d.images[4] == 1.0f);
    CHECK(d.labels == std::vector<std::int32_t>{7, 0});
    CHECK_THAT(input_error_message(idx_spec(images, labels, 4)),
               Contains("data.train.limit") && Contains(images));
  }
  SECTION("[N, C, H, W] -> [C, H, W]; a label >= 10 widens the classes to max + 1") {
    const std::string images4 = dir.file("images4");
    const std::string labels13 = dir.file("labels13.gz");
    write_raw(images4, idx_file({2, 3, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
    write_gz(labels13, idx_file({2}, {12, 3}));
    const Dataset d = load_dataset(idx_spec(images4, labels13), 1.0f, "train");
    CHECK(d.sample_shape == ra::Shape{3, 1, 2});
    CHECK(d.classes == 13);
    // classes is judged over the whole file, so limiting to the sample with label 3 keeps 13.
    CHECK(load_dataset(idx_spec(images4, labels13, 1), 1.0f, "train").classes == 13);
  }
  SECTION("images/labels count mismatch names both files") {
    const std::string labels2 = dir.file("labels2");
    write_raw(labels2, idx_file({2}, {1, 2}));
    CHECK_THAT(
        input_error_message(idx_spec(images, labels2)),
        Contains(images) && Contains(labels2) && Contains("3 images") && Contains("2 labels"));
  }
  SECTION("wrong ranks name the file") {
    CHECK_THAT(input_error_message(idx_spec(labels, labels)), Contains(labels));  // 1-D images
    CHECK_THAT(input_error_message(idx_spec(images, images)),
               Contains(images) && Contains("expected [N]"));  // 3-D labels
  }
  SECTION("a corrupt or missing file surfaces the reader's error") {
    CHECK_THAT(input_error_message(idx_spec(dir.file("nope.gz"), labels)),
               Contains(dir.file("nope.gz")));
  }
}

TEST_CASE("idx sets are checked by their headers before any data is read", "[dataset]") {
  TempDir dir;
  // Images whose header is fine and whose data is cut off: any error about the headers (shape,
  // counts, limit) must come first, which proves the data was not needed to find it.
  const Bytes whole = idx_file({3, 2, 2}, Bytes(12, 1));
  const std::string cut_images = dir.file("cut-images.gz");
  write_gz(cut_images, Bytes(whole.begin(), whole.end() - 6));
  const std::string labels = dir.file("labels");
  write_raw(labels, idx_file({3}, {1, 2, 3}));

  const auto error_with_shape = [&](const DatasetSpec& spec, const ra::Shape& expected) {
    try {
      load_dataset(spec, 1.0f, "train", expected);
    } catch (const ra::InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no InputError)");
  };
  CHECK_THAT(error_with_shape(idx_spec(cut_images, labels), {1, 28, 28}),
             Contains("data.train: " + cut_images +
                      " holds images of shape [1, 2, 2] but "
                      "model.input is [1, 28, 28]"));
  CHECK_THAT(input_error_message(idx_spec(cut_images, labels, 5)),
             Contains("data.train.limit") && Contains("exceeds the 3 samples"));
  const std::string labels4 = dir.file("labels4");
  write_raw(labels4, idx_file({4}, {1, 2, 3, 4}));
  CHECK_THAT(input_error_message(idx_spec(cut_images, labels4)), Contains("4 labels"));
  // With headers that agree, the cut-off data is what fails.
  CHECK_THAT(error_with_shape(idx_spec(cut_images, labels), {1, 2, 2}),
             Contains(cut_images) && Contains("truncated"));
}

TEST_CASE("a gzip bomb as images fails at its header, a FIFO at once", "[dataset]") {
  TempDir dir;
  const std::uint32_t n = 5478274;  // 4 GiB of 28 x 28 zeros in about 4 MB
  const std::string bomb = dir.file("bomb.gz");
  write_gz_zeros(bomb, idx_header({n, 28, 28}), std::uint64_t{n} * 28 * 28);
  const std::string labels = dir.file("labels.gz");
  write_gz_zeros(labels, idx_header({n}), n);
  CHECK_THAT(input_error_message(idx_spec(bomb, labels)),
             Contains(bomb) && Contains("more than 1 GiB"));
  const std::string fifo = dir.file("labels.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(input_error_message(idx_spec(dir.file("no-images"), fifo)),
             Contains("no-images") && Contains("No such file"));
  const std::string images = dir.file("images");
  write_raw(images, idx_file({1, 1, 1}, {0}));
  CHECK_THAT(input_error_message(idx_spec(images, fifo)), Contains(fifo) && Contains("FIFO"));
}

TEST_CASE("the real Fashion-MNIST training set", "[dataset][fashion-mnist]") {
  const std::string root = "/usr/share/datasets/fashion-mnist/";
  const std::string images = root + "train-images-idx3-ubyte.gz";
  const std::string labels = root + "train-labels-idx1-ubyte.gz";
  REQUIRE(std::filesystem::exists(images));  // installed by Debian's dataset-fashion-mnist

  const Dataset d = load_dataset(idx_spec(images, labels), 1.0f, "train");
  REQUIRE(d.size() == 60000);
  REQUIRE(d.sample_shape == ra::Shape{1, 28, 28});
  CHECK(d.classes == 10);
  CHECK(d.images.size() == 60000u * 784u);
  // Reference values read independently with Python's gzip module:
  //   l = gzip.open(labels).read()[8:]; d = gzip.open(images).read()[16:]
  CHECK(std::vector<std::int32_t>(d.labels.begin(), d.labels.begin() + 12) ==
        std::vector<std::int32_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5, 0, 9});
  CHECK(d.labels.back() == 5);
  CHECK(d.images[95] == 0.0f);
  CHECK(d.images[96] == 1.0f);
  CHECK(d.images[100] == 73.0f);
  CHECK(d.images[127] == 136.0f);
  CHECK(d.images[59999 * 784 + 239] == 71.0f);
  std::map<std::int32_t, int> per_class;
  for (std::int32_t l : d.labels) ++per_class[l];
  CHECK(per_class.size() == 10);
  for (const auto& [label, count] : per_class) CHECK(count == 6000);  // the set is balanced
  double pixel_sum = 0;  // integers below 2^53: exact in double
  for (float v : d.images) pixel_sum += v;
  CHECK(pixel_sum == 3431114169.0);  // sum(d) in Python

  SECTION("limit and scale") {
    const float scale = static_cast<float>(1.0 / 255.0);
    const Dataset small = load_dataset(idx_spec(images, labels, 1000), scale, "train");
    CHECK(small.size() == 1000);
    CHECK(small.images.size() == 1000u * 784u);
    CHECK(small.images[127] == 136.0f * scale);
    CHECK(small.labels[0] == 9);
    CHECK_THAT(input_error_message(idx_spec(images, labels, 60001)), Contains("60000 samples"));
  }
}

TEST_CASE("the random synthetic set", "[dataset][synthetic]") {
  const DatasetSpec spec = random_spec(42, 1024, {3, 32, 32}, 10);
  const Dataset a = load_dataset(spec, 1.0f, "train");
  REQUIRE(a.size() == 1024);
  REQUIRE(a.sample_shape == ra::Shape{3, 32, 32});
  REQUIRE(a.images.size() == 1024u * 3072u);
  CHECK(a.classes == 10);

  SECTION("reproducible for a seed; different for another seed and for the other role") {
    CHECK(same_bits(load_dataset(spec, 1.0f, "train").images, a.images));
    CHECK(load_dataset(spec, 1.0f, "train").labels == a.labels);
    const Dataset other = load_dataset(random_spec(43, 1024, {3, 32, 32}, 10), 1.0f, "train");
    CHECK_FALSE(same_bits(other.images, a.images));
    CHECK(other.labels != a.labels);
    CHECK_FALSE(same_bits(load_dataset(spec, 1.0f, "eval").images, a.images));
  }
  SECTION("values follow the documented counter layout (naive reference with philox_word)") {
    const ra::rng::PhiloxKey key = ra::rng::derive_key(42, "data/synthetic/train");
    for (std::uint64_t k : {0ull, 1ull, 2ull, 3ull, 4ull, 3071ull, 3072ull, 3145727ull}) {
      CHECK(a.images[k] == ra::rng::uniform_from_bits(ra::rng::philox_word(key, k, 0)));
    }
    for (std::uint64_t i : {0ull, 1ull, 2ull, 3ull, 1023ull}) {
      const std::uint64_t r = ra::rng::philox_word(key, 2 * i, 1) |
                              (std::uint64_t{ra::rng::philox_word(key, 2 * i + 1, 1)} << 32);
      CHECK(a.labels[i] == static_cast<std::int32_t>(ra::rng::uniform_below(r, 10)));
    }
  }
  SECTION("statistics: pixels in [0, 1) with mean ~0.5, labels in range and all present") {
    double sum = 0;
    float lo = 1, hi = 0;
    for (float v : a.images) {
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    // 3.1M uniforms: the mean's standard deviation is 0.289 / sqrt(3.1e6) = 1.6e-4.
    CHECK(sum / static_cast<double>(a.images.size()) == Approx(0.5).margin(0.002));
    CHECK(lo >= 0.0f);
    CHECK(hi < 1.0f);
    std::vector<int> per_class(10, 0);
    for (std::int32_t l : a.labels) {
      REQUIRE(l >= 0);
      REQUIRE(l < 10);
      ++per_class[static_cast<std::size_t>(l)];
    }
    // Binomial(1024, 0.1): mean 102.4, sd 9.6; 60..150 is beyond 4 sd either way.
    for (int c : per_class) CHECK((c > 60 && c < 150));
  }
  SECTION("limit is a prefix of the full set; scale multiplies") {
    DatasetSpec limited = spec;
    limited.limit = 100;
    const Dataset p = load_dataset(limited, 2.0f, "train");
    REQUIRE(p.size() == 100);
    CHECK(std::equal(p.labels.begin(), p.labels.end(), a.labels.begin()));
    for (std::size_t i = 0; i < p.images.size(); ++i) REQUIRE(p.images[i] == 2.0f * a.images[i]);
    limited.limit = 1025;
    CHECK_THAT(input_error_message(limited), Contains("data.train.limit") && Contains("1024"));
  }
  SECTION("bad synthetic specs name their JSON path") {
    CHECK_THAT(input_error_message(random_spec(1, 0, {1, 2, 2}, 10), "eval"),
               Contains("data.eval.samples"));
    CHECK_THAT(input_error_message(random_spec(1, 4, {1, 0, 2}, 10)), Contains("data.train.shape"));
    CHECK_THAT(input_error_message(random_spec(1, 4, {1, 2, 2}, 0)),
               Contains("data.train.classes"));
  }
}

TEST_CASE("the constant synthetic set", "[dataset][synthetic]") {
  DatasetSpec spec;
  spec.format = DataFormat::constant;
  spec.samples = 7;
  spec.shape = {2, 3, 3};
  spec.classes = 3;
  spec.value = 0.75f;
  const Dataset d = load_dataset(spec, 2.0f, "eval");
  CHECK(d.size() == 7);
  CHECK(d.sample_shape == ra::Shape{2, 3, 3});
  CHECK(d.classes == 3);
  CHECK(d.images == std::vector<float>(7 * 18, 1.5f));
  CHECK(d.labels == std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0});
}
