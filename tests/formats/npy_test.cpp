// .npy int64 files: byte-identical to NumPy's own output, round trips, and every malformed case
// rejected with an InputError naming the file.
#include "formats/npy.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"

namespace fs = std::filesystem;
using ra::Shape;

namespace {

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// Reference files written by NumPy 1.24.2 (Debian 12's python3-numpy):
//   import numpy as np, io; b = io.BytesIO(); np.save(b, a); b.getvalue().hex()
// with a = np.array([[0, 1, -2], [3, 2**62, -2**63]], dtype='<i8')      (kMatrix)
//      a = np.array([7, -1, 123456789012], dtype='<i8')                   (kVector)
//      a = np.array(-5, dtype='<i8')                                      (kScalar)
//      a = np.zeros((2, 0), dtype='<i8')                                  (kEmpty)
// and np.lib.format.write_array(b, kVector's array, version=(2, 0))       (kVectorV2)
const std::string kMatrix = from_hex(
    "934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028322c2033292c207d2020202020202020202020202020202020202020202020"
    "20202020202020202020202020202020202020202020202020202020202020202020200a00000000000000000100"
    "000000000000feffffffffffffff030000000000000000000000000000400000000000000080");
const std::string kVector = from_hex(
    "934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028332c292c207d20202020202020202020202020202020202020202020202020"
    "20202020202020202020202020202020202020202020202020202020202020202020200a0700000000000000ffff"
    "ffffffffffff141a99be1c000000");
const std::string kScalar = from_hex(
    "934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028292c207d202020202020202020202020202020202020202020202020202020"
    "20202020202020202020202020202020202020202020202020202020202020202020200afbffffffffffffff");
const std::string kEmpty = from_hex(
    "934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028322c2030292c207d2020202020202020202020202020202020202020202020"
    "20202020202020202020202020202020202020202020202020202020202020202020200a");
const std::string kVectorV2 = from_hex(
    "934e554d50590200740000007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a20"
    "46616c73652c20277368617065273a2028332c292c207d2020202020202020202020202020202020202020202020"
    "20202020202020202020202020202020202020202020202020202020202020202020200a0700000000000000ffff"
    "ffffffffffff141a99be1c000000");

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// A v1.0 file from a header dict and raw data, padded as NumPy pads (to 64 bytes).
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string int64_bytes(std::initializer_list<std::int64_t> values) {
  std::string s;
  for (std::int64_t v : values) {
    for (int i = 0; i < 8; ++i)
      s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
  }
  return s;
}

}  // namespace

TEST_CASE("encode_npy_int64 writes exactly what np.save writes", "[npy]") {
  CHECK(ra::formats::encode_npy_int64({0, 1, -2, 3, std::int64_t{1} << 62, kMin}, {2, 3}) ==
        kMatrix);
  CHECK(ra::formats::encode_npy_int64({7, -1, 123456789012}, {3}) == kVector);
  CHECK(ra::formats::encode_npy_int64({-5}, {}) == kScalar);
  CHECK(ra::formats::encode_npy_int64({}, {2, 0}) == kEmpty);
  // However long the shape, the data starts at a multiple of 64 bytes after a '\n'.
  for (const Shape& shape : {Shape{1}, Shape{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}) {
    const std::string bytes = ra::formats::encode_npy_int64({42}, shape);
    CHECK((bytes.size() - 8) % 64 == 0);
    CHECK(bytes[bytes.size() - 9] == '\n');
  }
  CHECK_THROWS_AS(ra::formats::encode_npy_int64({1, 2, 3}, {2, 2}), std::invalid_argument);
}

TEST_CASE("decode_npy_int64 reads NumPy's files, versions 1.0 and 2.0", "[npy]") {
  Shape shape;
  CHECK(ra::formats::decode_npy_int64(kMatrix, "m.npy", &shape) ==
        std::vector<std::int64_t>{0, 1, -2, 3, std::int64_t{1} << 62, kMin});
  CHECK(shape == Shape{2, 3});
  CHECK(ra::formats::decode_npy_int64(kVector, "v.npy", &shape) ==
        std::vector<std::int64_t>{7, -1, 123456789012});
  CHECK(shape == Shape{3});
  CHECK(ra::formats::decode_npy_int64(kScalar, "s.npy", &shape) == std::vector<std::int64_t>{-5});
  CHECK(shape == Shape{});
  CHECK(ra::formats::decode_npy_int64(kEmpty, "e.npy", &shape).empty());
  CHECK(shape == Shape{2, 0});
  CHECK(ra::formats::decode_npy_int64(kVectorV2, "v2.npy", &shape) ==
        std::vector<std::int64_t>{7, -1, 123456789012});
  CHECK(shape == Shape{3});
  // Other writers: double quotes, no trailing comma, other key order, 16-byte padding.
  CHECK(ra::formats::decode_npy_int64(npy_v1("{\"shape\": (2,), \"fortran_order\": False, "
                                             "\"descr\": \"<i8\"}",
                                             int64_bytes({4, 5})),
                                      "other.npy", nullptr) == std::vector<std::int64_t>{4, 5});
}

TEST_CASE("write_npy_int64 and read_npy_int64 round-trip through a file", "[npy]") {
  const fs::path file =
      fs::temp_directory_path() / ("ra_npy_test_" + std::to_string(::getpid()) + ".npy");
  const std::vector<std::int64_t> values = {5,    -6, 7,
                                            kMin, 0,  std::numeric_limits<std::int64_t>::max()};
  ra::formats::write_npy_int64(file, values, {3, 1, 2});
  Shape shape;
  CHECK(ra::formats::read_npy_int64(file, &shape) == values);
  CHECK(shape == Shape{3, 1, 2});
  fs::remove(file);
  CHECK_THROWS_WITH(ra::formats::read_npy_int64(file, nullptr),
                    Catch::Contains(file.string()) && Catch::Contains("No such file"));
}

TEST_CASE("malformed .npy files are InputErrors naming the file and the fault", "[npy]") {
  const std::string good_dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";
  const std::string two = int64_bytes({1, 2});
  std::string wrong_version = kVector;
  wrong_version[6] = '\x04';
  std::string long_header = kVector;
  long_header[8] = '\xFF';  // 0x76 -> 0xFF: header would end beyond the file
  long_header[9] = '\x7F';

  struct Case {
    const char* what;
    std::string bytes;
    const char* expected;
  };
  const Case cases[] = {
      {"empty file", "", "does not start with"},
      {"wrong magic", "\x93NUMPZ" + kVector.substr(6), "does not start with"},
      {"version 4.0", wrong_version, "format version 4.0"},
      {"ends in the length", std::string("\x93NUMPY\x01\x00\x10", 9),
       "ends inside the header length"},
      {"header beyond file", long_header, "beyond the end of the file"},
      {"not a dict", npy_v1("['descr', '<i8']", two), "expected '{'"},
      {"key without ':'", npy_v1("{'descr: '<i8'}", two), "expected ':'"},
      {"unterminated string", npy_v1("{'descr': '<i8", two), "unterminated string"},
      {"missing key", npy_v1("{'descr': '<i8', 'shape': (2,), }", two), "exactly the keys"},
      {"extra key",
       npy_v1("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), 'x': 'y'}", two),
       "exactly the keys"},
      {"float dtype", npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", two),
       "dtype '<f8' is not supported"},
      {"big-endian", npy_v1("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", two),
       "dtype '>i8' is not supported"},
      {"fortran order", npy_v1("{'descr': '<i8', 'fortran_order': True, 'shape': (2,), }", two),
       "fortran_order True"},
      {"shape not a tuple", npy_v1("{'descr': '<i8', 'fortran_order': False, 'shape': '2', }", two),
       "'shape' is not a tuple"},
      {"negative dimension",
       npy_v1("{'descr': '<i8', 'fortran_order': False, 'shape': (-2,), }", two),
       "non-negative integer"},
      {"text after dict", npy_v1(good_dict + " x", two), "unexpected text"},
      {"truncated data", npy_v1(good_dict, two.substr(0, 12)), "(truncated)"},
      {"trailing bytes", npy_v1(good_dict, two + "xyz"), "found 19 (trailing bytes)"},
      {"overflowing shape",
       npy_v1("{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
              two),
       "needs more data"},
      // Empty by its zero, but (2**62)**2 elements were it not: NumPy refuses it, and reading it
      // as empty would hand element_count a shape it overflows on.
      {"overflowing empty shape",
       npy_v1("{'descr': '<i8', 'fortran_order': False, 'shape': (4611686018427387904, "
              "4611686018427387904, 0), }",
              ""),
       "is too large"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    try {
      ra::formats::decode_npy_int64(c.bytes, "runs/batches.npy", nullptr);
      FAIL("expected InputError");
    } catch (const ra::InputError& e) {
      const std::string what = e.what();
      CHECK(what.find("runs/batches.npy") != std::string::npos);
      CHECK_THAT(what, Catch::Contains(c.expected));
    }
  }
}

namespace {

// The header read_npy_header reads from `bytes` written to a file, or its InputError's message.
std::string header_problem(const std::string& bytes, ra::formats::NpyHeader* header = nullptr) {
  const fs::path file =
      fs::temp_directory_path() / ("ra_npy_header_" + std::to_string(::getpid()) + ".npy");
  ra::write_file_atomic(file, bytes);
  std::string problem;
  try {
    ra::ByteReader in(file.string());
    const ra::formats::NpyHeader h = ra::formats::read_npy_header(in);
    if (header) *header = h;
  } catch (const ra::InputError& e) {
    problem = e.what();
  }
  fs::remove(file);
  return problem;
}

}  // namespace

TEST_CASE("read_npy_header reads NumPy's headers from a file and stops at the data", "[npy]") {
  ra::formats::NpyHeader h;
  REQUIRE(header_problem(kMatrix, &h).empty());
  CHECK(h.descr == "<i8");
  CHECK_FALSE(h.fortran_order);
  CHECK(h.shape == Shape{2, 3});
  CHECK(h.data_offset == kMatrix.size() - 6 * 8);
  REQUIRE(header_problem(kVectorV2, &h).empty());
  CHECK(h.shape == Shape{3});
  CHECK(h.data_offset == kVectorV2.size() - 3 * 8);
  // Any dtype: the caller judges it.
  REQUIRE(header_problem(npy_v1("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }",
                                std::string(6, '\0')),
                         &h)
              .empty());
  CHECK(h.descr == "|u1");
  CHECK(h.fortran_order);
}

TEST_CASE("read_npy_header: a header cut anywhere is a truncated file, named", "[npy]") {
  CHECK_THAT(header_problem(""), Catch::Contains("does not start with"));
  CHECK_THAT(header_problem("\x93NUM"), Catch::Contains("truncated: the file ends after 4 bytes"));
  CHECK_THAT(header_problem(kMatrix.substr(0, 9)),
             Catch::Contains("truncated: the file ends inside the header length"));
  CHECK_THAT(
      header_problem(kMatrix.substr(0, 40)),
      Catch::Contains("ra_npy_header_") &&
          Catch::Contains("truncated: the header declares 118 bytes, the file ends after 30"));
  CHECK_THAT(header_problem("PK\x03\x04 a zip file"), Catch::Contains("does not start with"));
  // A 4-byte length (format 2.0) claiming 4 GiB is refused before any allocation.
  std::string huge = "\x93NUMPY\x02";
  huge += std::string("\x00\xff\xff\xff\xff", 5);
  CHECK_THAT(header_problem(huge), Catch::Contains("header length 4294967295 is beyond"));
  CHECK_THAT(header_problem(npy_v1("{'descr': '<f4', 'shape': (2,), }", "")),
             Catch::Contains("header must have exactly the keys descr, fortran_order, shape"));
}

TEST_CASE("npy_item_bytes: plain numbers only", "[npy]") {
  CHECK(ra::formats::npy_item_bytes("|u1") == 1);
  CHECK(ra::formats::npy_item_bytes("<i2") == 2);
  CHECK(ra::formats::npy_item_bytes("<f4") == 4);
  CHECK(ra::formats::npy_item_bytes(">i8") == 8);
  CHECK(ra::formats::npy_item_bytes("|b1") == 1);
  for (const char* other : {"<c8", "<U3", "|S4", "|V12", "<f16", "<m8", "", "f4"}) {
    CHECK(ra::formats::npy_item_bytes(other) == 0);
  }
}
