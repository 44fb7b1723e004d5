// CIFAR-10's binary batches, on files made here byte by byte from the published description
// (https://www.cs.toronto.edu/~kriz/cifar.html): the real batches cannot be downloaded where these
// tests run, so this reader is tested on hand-made files only (docs/spec.md, "Data").
#include "data/cifar10.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"
#include "idx_fixtures.h"

using namespace ra::data;
using namespace ra::data::testing;
using Catch::Matchers::Contains;
using ra::spec::DataFormat;
using ra::spec::DatasetSpec;

namespace {

// Record r of a made-up batch: label `label`, pixel p of channel c = (7 r + 3 c + p) mod 256, so
// that the first pixel of record 0 is 0 and every record holds 255 somewhere.
Bytes cifar_record(std::uint8_t label, int r) {
  Bytes b{label};
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 1024; ++p)
      b.push_back(static_cast<std::uint8_t>((7 * r + 3 * c + p) % 256));
  }
  return b;
}

Bytes cifar_batch(const std::vector<std::uint8_t>& labels, int first_record = 0) {
  Bytes b;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const Bytes r = cifar_record(labels[i], first_record + static_cast<int>(i));
    b.insert(b.end(), r.begin(), r.end());
  }
  return b;
}

DatasetSpec cifar_spec(std::vector<std::string> files, std::int64_t limit = 0) {
  DatasetSpec s;
  s.format = DataFormat::cifar10;
  s.files = std::move(files);
  s.limit = limit;
  return s;
}

}  // namespace

TEST_CASE("cifar10: records read back exactly, channel-major, in file order", "[cifar10]") {
  TempDir dir;
  // One record alone: label 9, the largest class; pixel values 0 and 255 both present.
  write_raw(dir.file("one.bin"), cifar_batch({9}));
  const Dataset one = load_dataset(cifar_spec({dir.file("one.bin")}), 1.0f, "train");
  REQUIRE(one.size() == 1);
  CHECK(one.labels[0] == 9);
  CHECK(one.sample_shape == ra::Shape{3, 32, 32});
  CHECK(one.classes == 10);
  const Bytes r0 = cifar_record(9, 0);
  for (std::size_t k = 0; k < 3072; ++k) REQUIRE(one.images[k] == static_cast<float>(r0[k + 1]));
  CHECK(one.images[0] == 0.0f);
  CHECK(one.images[255] == 255.0f);                    // red channel, row 7, column 31
  CHECK(one.images[1024] == 3.0f);                     // green channel starts at element 1024
  CHECK(one.images[2048 + 1023] == (6 + 1023) % 256);  // blue channel's last pixel

  // Two files, concatenated in the order the spec names them; the last record of the last file.
  write_raw(dir.file("a.bin"), cifar_batch({0, 1, 2}));
  write_gz(dir.file("b.bin.gz"), cifar_batch({3, 9}, 3));
  const Dataset both =
      load_dataset(cifar_spec({dir.file("a.bin"), dir.file("b.bin.gz")}), 1.0f / 255, "train");
  REQUIRE(both.size() == 5);
  CHECK(both.labels == std::vector<std::int32_t>{0, 1, 2, 3, 9});
  const Bytes last = cifar_record(9, 4);
  for (std::size_t k = 0; k < 3072; ++k) {
    REQUIRE(both.images[4 * 3072 + k] == static_cast<float>(last[k + 1]) * (1.0f / 255));
  }
  // A limit keeps the first records across the files.
  const Dataset limited =
      load_dataset(cifar_spec({dir.file("a.bin"), dir.file("b.bin.gz")}, 4), 1.0f, "train");
  CHECK(limited.labels == std::vector<std::int32_t>{0, 1, 2, 3});
  CHECK(limited.images.size() == 4 * 3072);
}

TEST_CASE("cifar10: bad files are refused, naming the file and the problem", "[cifar10]") {
  TempDir dir;
  write_raw(dir.file("good.bin"), cifar_batch({1, 2}));
  // A missing file, by its spec key, before any file is read.
  CHECK_THAT(input_error_message(cifar_spec({dir.file("good.bin"), dir.file("nope.bin")})),
             Contains("data.train.files[1]: " + dir.file("nope.bin") + ": cannot open"));
  // Wrong sizes: empty, cut short, one byte too many.
  write_raw(dir.file("empty.bin"), {});
  CHECK_THAT(input_error_message(cifar_spec({dir.file("empty.bin")})),
             Contains(dir.file("empty.bin") + ": empty"));
  Bytes cut = cifar_batch({1, 2});
  cut.pop_back();
  write_raw(dir.file("cut.bin"), cut);
  CHECK_THAT(input_error_message(cifar_spec({dir.file("cut.bin")})),
             Contains(dir.file("cut.bin") + ": 6145 bytes is not a multiple of the 3073-byte"));
  Bytes longer = cifar_batch({1});
  longer.push_back(0);
  write_gz(dir.file("long.bin.gz"), longer);
  CHECK_THAT(input_error_message(cifar_spec({dir.file("long.bin.gz")})),
             Contains("3074 bytes is not a multiple of the 3073-byte CIFAR-10 record"));
  // A CIFAR-100 file (2 label bytes a record) is named as such.
  write_raw(dir.file("cifar100.bin"), Bytes(3 * 3074, 1));
  CHECK_THAT(input_error_message(cifar_spec({dir.file("cifar100.bin")})),
             Contains("multiple of 3074, CIFAR-100's record"));
  // A label above 9, by record and offset.
  write_raw(dir.file("label10.bin"), cifar_batch({3, 10}));
  CHECK_THAT(input_error_message(cifar_spec({dir.file("label10.bin")})),
             Contains(dir.file("label10.bin") +
                      ": label 10 of record 1 (byte offset 3073) is not a CIFAR-10 class (0..9)"));
  // A limit beyond the records of all files.
  CHECK_THAT(input_error_message(cifar_spec({dir.file("good.bin")}, 3)),
             Contains("data.train.limit: 3 exceeds the 2 samples of " + dir.file("good.bin")));
  // Not a regular file: refused at once, never read.
  REQUIRE(::mkfifo(dir.file("fifo.bin").c_str(), 0600) == 0);
  CHECK_THAT(input_error_message(cifar_spec({dir.file("fifo.bin")})), Contains("FIFO"));
}

TEST_CASE("cifar10: a raw file's size is judged before any file is read", "[cifar10]") {
  TempDir dir;
  write_raw(dir.file("good.bin"), cifar_batch({1}));
  write_raw(dir.file("bad.bin"), Bytes(100, 0));
  Cifar10File good(dir.file("good.bin"));
  CHECK(good.records() == 1);
  // The bad second file fails when it is opened, before the first is read.
  CHECK_THAT(input_error_message(cifar_spec({dir.file("good.bin"), dir.file("bad.bin")})),
             Contains(dir.file("bad.bin") + ": 100 bytes is not a multiple"));
}
