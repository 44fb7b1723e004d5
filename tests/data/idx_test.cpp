// IDX reader: hand-made files, raw and gzip, read back exactly; every kind of corruption is an
// InputError that names the file.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/idx.h"
#include "idx_fixtures.h"

using namespace ra::data;
using namespace ra::data::testing;
using Catch::Matchers::Contains;

namespace {

Bytes iota_bytes(std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(i * 7 % 256);
  return b;
}

// Checks that reading `path` throws an InputError whose message names the file and says `what`.
void require_input_error(const std::string& path, const std::string& what) {
  try {
    read_idx(path);
    FAIL("read_idx accepted " << path);
  } catch (const ra::InputError& e) {
    CHECK_THAT(e.what(), Contains(path) && Contains(what));
  }
}

}  // namespace

TEST_CASE("read_idx reads raw and gzip files back exactly", "[idx]") {
  TempDir dir;
  SECTION("1-D labels, raw") {
    const std::string path = dir.file("labels.idx");
    write_raw(path, {0, 0, 8, 1, 0, 0, 0, 5, 3, 1, 4, 1, 5});  // written out by hand
    const IdxArray a = read_idx(path);
    CHECK(a.dims == std::vector<std::int64_t>{5});
    CHECK(a.bytes == Bytes{3, 1, 4, 1, 5});
  }
  SECTION("3-D images, raw and gzip, detected by content not by name") {
    const Bytes data = iota_bytes(2 * 3 * 4);
    const Bytes file = idx_file({2, 3, 4}, data);
    const std::string raw_named_gz = dir.file("images-raw.gz");
    const std::string gz_named_raw = dir.file("images-gz.idx");
    write_raw(raw_named_gz, file);
    write_gz(gz_named_raw, file);
    REQUIRE(read_raw(gz_named_raw).at(0) == 0x1f);  // really compressed
    for (const std::string& path : {raw_named_gz, gz_named_raw}) {
      const IdxArray a = read_idx(path);
      CHECK(a.dims == std::vector<std::int64_t>{2, 3, 4});
      CHECK(a.bytes == data);
    }
  }
  SECTION("4-D, dims above 255 (all four big-endian bytes matter)") {
    // 300 = 0x012C: a little-endian reader would see 0x2C010000.
    const Bytes data = iota_bytes(300 * 2);
    const std::string path = dir.file("four.idx.gz");
    write_gz(path, idx_file({300, 1, 2, 1}, data));
    const IdxArray a = read_idx(path);
    CHECK(a.dims == std::vector<std::int64_t>{300, 1, 2, 1});
    CHECK(a.bytes == data);
  }
  SECTION("a gzip file larger than one read chunk") {
    // 20 MiB > the reader's 16 MiB chunk, so the chunked loop and its growth are exercised.
    const std::uint32_t n = 20u << 20;
    Bytes data(n);
    std::uint32_t x = 12345;
    for (auto& b : data) b = static_cast<std::uint8_t>((x = x * 1103515245u + 12345u) >> 24);
    const std::string path = dir.file("big.gz");
    write_gz(path, idx_file({n}, data));
    const IdxArray a = read_idx(path);
    CHECK(a.dims == std::vector<std::int64_t>{n});
    CHECK(a.bytes == data);
  }
}

TEST_CASE("read_idx rejects malformed files with an InputError naming the file", "[idx]") {
  TempDir dir;
  const Bytes good = idx_file({4, 3}, iota_bytes(12));

  SECTION("missing file") {
    require_input_error(dir.file("absent.gz"), "No such file");
  }
  SECTION("a directory") {
    require_input_error(dir.file(""), "directory");
  }
  SECTION("empty file") {
    const std::string path = dir.file("empty");
    write_raw(path, {});
    require_input_error(path, "not an IDX file");
  }
  SECTION("bad magic: first two bytes not zero") {
    Bytes b = good;
    b[1] = 0x01;
    const std::string path = dir.file("magic.idx");
    write_raw(path, b);
    require_input_error(path, "not an IDX file");
  }
  SECTION("wrong type byte (float data)") {
    Bytes b = good;
    b[2] = 0x0D;
    const std::string path = dir.file("float.idx");
    write_raw(path, b);
    require_input_error(path, "0x0D");
  }
  SECTION("ndim 0 and ndim 5") {
    const std::string zero = dir.file("ndim0.idx");
    write_raw(zero, {0, 0, 8, 0});
    require_input_error(zero, "0 dimensions");
    const std::string five = dir.file("ndim5.idx");
    write_raw(five, idx_file({1, 1, 1, 1, 1}, {7}));
    require_input_error(five, "5 dimensions");
  }
  SECTION("a zero dimension") {
    const std::string path = dir.file("zero-dim.idx");
    write_raw(path, idx_file({4, 0}, {}));
    require_input_error(path, "zero");
  }
  SECTION("absurd dimensions (2^48 bytes), raw and gzip") {
    const Bytes b = idx_file({65536, 65536, 65536}, {1, 2, 3});
    const std::string raw = dir.file("absurd.idx");
    const std::string gz = dir.file("absurd.idx.gz");
    write_raw(raw, b);
    write_gz(gz, b);
    require_input_error(raw, "more than 1 GiB of data (dims [65536, 65536, ...])");
    require_input_error(gz, "more than 1 GiB of data");
  }
  SECTION("header cut off inside the dims") {
    const std::string path = dir.file("short-header.idx");
    write_raw(path, {0, 0, 8, 2, 0, 0, 0, 4, 0, 0});
    require_input_error(path, "truncated");
  }
  SECTION("truncated data, raw and gzip") {
    const Bytes b(good.begin(), good.end() - 1);
    const std::string raw = dir.file("truncated.idx");
    const std::string gz = dir.file("truncated.idx.gz");
    write_raw(raw, b);
    write_gz(gz, b);
    require_input_error(raw, "truncated");
    require_input_error(gz, "truncated");
  }
  SECTION("trailing bytes, raw and gzip") {
    Bytes b = good;
    b.push_back(0);
    const std::string raw = dir.file("trailing.idx");
    const std::string gz = dir.file("trailing.idx.gz");
    write_raw(raw, b);
    write_gz(gz, b);
    require_input_error(raw, "trailing");
    require_input_error(gz, "trailing");
  }
  SECTION("gzip corrupted midway and gzip cut off") {
    // 64 KiB of a 16-symbol LCG sequence: deflate codes it with Huffman blocks, so a damaged
    // byte either breaks decoding or, at the latest, fails the CRC-32 in the gzip trailer.
    Bytes data(1u << 16);
    std::uint32_t x = 1;
    for (auto& b : data) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 28);
    const std::string clean = dir.file("clean.gz");
    write_gz(clean, idx_file({1u << 16}, data));
    REQUIRE(read_idx(clean).bytes == data);
    const Bytes compressed = read_raw(clean);
    REQUIRE(compressed.size() > 1000);

    Bytes damaged = compressed;
    for (std::size_t i = damaged.size() / 2; i < damaged.size() / 2 + 8; ++i) damaged[i] ^= 0x5A;
    const std::string corrupt = dir.file("corrupt.gz");
    write_raw(corrupt, damaged);
    require_input_error(corrupt, "gzip");

    const Bytes cut(compressed.begin(), compressed.begin() + compressed.size() / 2);
    const std::string cut_path = dir.file("cut.gz");
    write_raw(cut_path, cut);
    require_input_error(cut_path, "truncated");
  }
}

TEST_CASE("read_idx refuses what is not a regular file, without blocking", "[idx]") {
  TempDir dir;
  const std::string fifo = dir.file("images.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  require_input_error(fifo, "is a FIFO (named pipe), not a regular file");
  require_input_error("/dev/zero", "is a character device, not a regular file");
  require_input_error(dir.file(""), "is a directory, not a regular file");
}

TEST_CASE("a gzip bomb is refused by its header, before any inflating", "[idx]") {
  TempDir dir;
  // 5,478,274 images of 28 x 28: 4 GiB of zeros in a 4 MB gzip file. The header declares more
  // than the 1 GiB cap, which is all that is read.
  const std::uint32_t n = 5478274;
  const std::string bomb = dir.file("bomb-images.gz");
  write_gz_zeros(bomb, idx_header({n, 28, 28}), std::uint64_t{n} * 28 * 28);
  CHECK(std::filesystem::file_size(bomb) < (8u << 20));
  const auto start = std::chrono::steady_clock::now();
  require_input_error(bomb, "IDX header declares more than 1 GiB of data (dims [5478274, 28, 28])");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("reading stops one byte past the declared data", "[idx]") {
  TempDir dir;
  // The header declares 1000 bytes; 4 GiB of zeros follow. Only 1001 bytes are inflated: the
  // extra one is an error ("trailing bytes"), found at once (inflating it all takes seconds).
  const std::string path = dir.file("trailing-bomb.gz");
  write_gz_zeros(path, idx_header({1000}), std::uint64_t{4} << 30);
  const auto start = std::chrono::steady_clock::now();
  require_input_error(path, "trailing bytes after the 1000 data bytes");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));

  // The fixture itself is a valid gzip file: the same construction with a matching header
  // reads back whole.
  const std::string honest = dir.file("zeros.gz");
  write_gz_zeros(honest, idx_header({3u << 20}), 3u << 20);
  const IdxArray a = read_idx(honest);
  CHECK(a.bytes.size() == (3u << 20));
  CHECK(std::all_of(a.bytes.begin(), a.bytes.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST_CASE("IdxReader gives the header's dims before reading any data", "[idx]") {
  TempDir dir;
  // A header for 4 x 3 bytes and a payload cut off after 5: the dims are known, the data is not.
  const Bytes whole = idx_file({4, 3}, iota_bytes(12));
  const std::string path = dir.file("cut.gz");
  write_gz(path, Bytes(whole.begin(), whole.end() - 7));
  IdxReader reader(path);
  CHECK(reader.dims() == std::vector<std::int64_t>{4, 3});
  CHECK(reader.data_bytes() == 12);
  CHECK_THROWS_WITH(reader.read_data(), Contains(path) && Contains("truncated"));
}
