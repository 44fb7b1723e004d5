// safetensors snapshots: the exact byte layout of the format, bit-exact round trips, and every
// corrupt case rejected with an InputError naming the file.
//
// Cross-check with PyTorch, done once while developing (Debian 12 has no python3-safetensors, so
// the file was parsed by hand): write_safetensors wrote conv1.weight [4, 1, 3, 3], conv1.bias [4]
// and dense.weight [10, 36] of tensor k holding (i - 17) * 0.3f * (1 + k) at element i, except
// -0.0, the smallest denormal and +-inf at elements 0..2, plus metadata {point, run}. In
// /usr/bin/python3 (torch 1.13, numpy 1.24) the file was read by
//   n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n)); data = f.read()
//   b, e = h[name]['data_offsets']
//   t = torch.from_numpy(np.frombuffer(data[b:e], '<f4').reshape(h[name]['shape']).copy())
// and every tensor was equal bit for bit (torch.equal on .view(torch.int32)) to the same values
// computed in PyTorch; n % 8 == 0, the offsets tiled the data to its end, and the metadata came
// back as written.
#include "formats/safetensors.h"

#include <unistd.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "core/error.h"

namespace fs = std::filesystem;
using ra::Shape;
using ra::Tensor;
using ra::formats::NamedTensor;

namespace {

std::string u64_le(std::uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

std::string f32_le(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) {
    const auto bits = std::bit_cast<std::uint32_t>(v);
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  }
  return s;
}

// A file as any writer could produce it: length, header text as given, data.
std::string file_from(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

Tensor tensor_of(Shape shape, std::initializer_list<float> values) {
  Tensor t(std::move(shape));
  REQUIRE(t.size() == values.size());
  std::size_t i = 0;
  for (float v : values) t[i++] = v;
  return t;
}

}  // namespace

TEST_CASE("encode_safetensors lays out bytes exactly as the format says", "[safetensors]") {
  const Tensor b = tensor_of({2}, {1.0f, -2.0f});
  const Tensor a = tensor_of({1, 1}, {0.5f});
  // Hand-built: header JSON in the order written (metadata first), 141 bytes padded with 3 spaces
  // to 144 (a multiple of 8), then the data of b (bytes 0..8) and a (8..12), little-endian:
  // 1.0f = 0x3F800000, -2.0f = 0xC0000000, 0.5f = 0x3F000000.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[1,1],"data_offsets":[8,12]}}   )";
  REQUIRE(header.size() == 144);
  const std::string expected =
      u64_le(144) + header + std::string("\x00\x00\x80\x3F\x00\x00\x00\xC0\x00\x00\x00\x3F", 12);
  CHECK(ra::formats::encode_safetensors({{"b", &b}, {"a", &a}}, {{"format", "pt"}}) == expected);

  // No tensors and no metadata: "{}" padded to 8.
  CHECK(ra::formats::encode_safetensors({}) == u64_le(8) + "{}      ");
}

TEST_CASE("write_safetensors and read_safetensors round-trip bit for bit", "[safetensors]") {
  const float nan_payload = std::bit_cast<float>(0x7FC01234u);
  const Tensor weight = tensor_of(
      {2, 1, 2, 2}, {-0.0f, 0.0f, std::numeric_limits<float>::denorm_min(),
                     std::numeric_limits<float>::infinity(), nan_payload, -3.25f, 1e-30f, 3.4e38f});
  const Tensor bias = tensor_of({2}, {0.1f, -0.2f});
  const Tensor empty(Shape{0, 3});
  const Tensor scalar = tensor_of({}, {42.0f});
  const std::map<std::string, std::string> metadata = {
      {"point", "final"}, {"run", "3"}, {"é", "ü\"\\"}};
  const fs::path file = fs::temp_directory_path() /
                        ("ra_safetensors_test_" + std::to_string(::getpid()) + ".safetensors");

  // Written in an order that is not alphabetical: the reader must return file order.
  ra::formats::write_safetensors(
      file, {{"z.weight", &weight}, {"a.bias", &bias}, {"m.empty", &empty}, {"scalar", &scalar}},
      metadata);
  const ra::formats::SafetensorsFile read = ra::formats::read_safetensors(file);
  fs::remove(file);

  CHECK(read.metadata == metadata);
  REQUIRE(read.tensors.size() == 4);
  CHECK(read.tensors[0].first == "z.weight");
  CHECK(read.tensors[1].first == "a.bias");
  CHECK(read.tensors[2].first == "m.empty");
  CHECK(read.tensors[3].first == "scalar");
  CHECK(ra::bitwise_equal(read.tensors[0].second, weight));  // -0, denormal, inf, NaN payload
  CHECK(ra::bitwise_equal(read.tensors[1].second, bias));
  CHECK(read.tensors[2].second.shape() == Shape{0, 3});
  CHECK(ra::bitwise_equal(read.tensors[3].second, scalar));
  REQUIRE(read.find("a.bias") != nullptr);
  CHECK(read.find("a.bias") == &read.tensors[1].second);
  CHECK(read.find("missing") == nullptr);

  // The data of a written file starts 8-byte aligned.
  const std::string bytes = ra::formats::encode_safetensors({{"b", &bias}}, metadata);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK((8 + n) % 8 == 0);
  CHECK(bytes.size() == 8 + n + 8);
}

TEST_CASE("files from other writers: any key order, padding, data order", "[safetensors]") {
  // Metadata last, tensor "a" stored after "b", extra spaces: still valid safetensors.
  const std::string header =
      R"({ "a": {"data_offsets": [4, 12], "shape": [2], "dtype": "F32"},)"
      R"( "b": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, "__metadata__": {"k": "v"} }   )";
  const auto file =
      ra::formats::decode_safetensors(file_from(header, f32_le({9.0f, 1.5f, -1.5f})), "x");
  REQUIRE(file.tensors.size() == 2);
  CHECK(file.tensors[0].first == "b");  // sorted by data offset
  CHECK(file.tensors[0].second[0] == 9.0f);
  CHECK(file.tensors[1].first == "a");
  CHECK(file.tensors[1].second.shape() == Shape{2});
  CHECK(file.tensors[1].second[0] == 1.5f);
  CHECK(file.tensors[1].second[1] == -1.5f);
  CHECK(file.metadata == std::map<std::string, std::string>{{"k", "v"}});
}

TEST_CASE("write_safetensors rejects caller bugs and reports I/O failures", "[safetensors]") {
  const Tensor t = tensor_of({1}, {1.0f});
  CHECK_THROWS_AS(ra::formats::encode_safetensors({{"a", &t}, {"a", &t}}), std::invalid_argument);
  CHECK_THROWS_AS(ra::formats::encode_safetensors({{"__metadata__", &t}}), std::invalid_argument);
  CHECK_THROWS_AS(ra::formats::encode_safetensors({{"", &t}}), std::invalid_argument);
  CHECK_THROWS_AS(ra::formats::encode_safetensors({{"a", nullptr}}), std::invalid_argument);
  const Tensor inconsistent;  // shape [] means one element, but it holds none
  CHECK_THROWS_AS(ra::formats::encode_safetensors({{"a", &inconsistent}}), std::invalid_argument);
  const fs::path missing = fs::temp_directory_path() / "ra_no_such_folder_xyz" / "w.safetensors";
  CHECK_THROWS_AS(ra::formats::write_safetensors(missing, {{"a", &t}}), ra::InputError);
}

TEST_CASE("corrupt safetensors files are InputErrors naming the file and the fault",
          "[safetensors]") {
  const std::string one = f32_le({1.0f});
  const std::string two = f32_le({1.0f, 2.0f});
  const auto entry = [](const char* name, const char* shape, const char* offsets,
                        const char* dtype = "F32") {
    return std::string("\"") + name + "\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
           ", \"data_offsets\": " + offsets + "}";
  };
  const auto object = [](const std::string& inside) { return "{" + inside + "}"; };

  struct Case {
    const char* what;
    std::string bytes;
    const char* expected;
  };
  const Case cases[] = {
      {"empty file", "", "short header: 0 bytes"},
      {"short header", std::string("\x10\x00\x00", 3), "short header: 3 bytes"},
      {"header beyond file", u64_le(100) + "{}", "header length 100 goes beyond the end"},
      {"huge header length", u64_le(~std::uint64_t{0}) + "{}", "goes beyond the end"},
      {"bad JSON", file_from("{\"a\": ", ""), "header:1:7: invalid JSON"},
      {"deep JSON", file_from(std::string(100000, '['), ""), "deeper than 64 levels"},
      {"number out of range", file_from("{\"a\": 1e400}", ""), "number 1e400 is out of range"},
      {"not an object", file_from("[1, 2]", ""), "header is not a JSON object"},
      {"entry not an object", file_from(R"({"a": 3})", ""), "tensor \"a\": entry is not an object"},
      {"F16", file_from(object(entry("a", "[2]", "[0, 4]", "F16")), one),
       "tensor \"a\": dtype F16 is not supported"},
      {"missing dtype", file_from(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", one),
       "missing \"dtype\""},
      {"missing shape", file_from(R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", one),
       "missing \"shape\""},
      {"negative size", file_from(object(entry("a", "[-1]", "[0, 4]")), one),
       "not a list of sizes"},
      {"huge shape", file_from(object(entry("a", "[4294967296, 4294967296]", "[0, 4]")), one),
       "is too large"},
      {"offsets not a pair", file_from(object(entry("a", "[1]", "[0]")), one), "not a pair"},
      {"negative offset", file_from(object(entry("a", "[1]", "[-4, 0]")), one), "not a pair"},
      {"float offset", file_from(object(entry("a", "[1]", "[0.0, 4]")), one), "not a pair"},
      {"end before begin", file_from(object(entry("a", "[0]", "[4, 0]")), one), "end before"},
      {"size not shape*4", file_from(object(entry("a", "[2]", "[0, 4]")), two),
       "span 4 bytes, but shape [2] of F32 needs 8"},
      {"out of range", file_from(object(entry("a", "[2]", "[0, 8]")), one),
       "go beyond the 4 bytes of data"},
      {"overlap",
       file_from(object(entry("a", "[2]", "[0, 8]") + ", " + entry("b", "[1]", "[4, 8]")), two),
       "tensor \"b\": data overlaps tensor \"a\""},
      {"gap", file_from(object(entry("a", "[1]", "[4, 8]")), two), "begins at byte 4, expected 0"},
      {"trailing bytes", file_from(object(entry("a", "[1]", "[0, 4]")), two + "x"),
       "5 trailing bytes"},
      {"duplicate name",
       file_from(object(entry("a", "[1]", "[0, 4]") + ", " + entry("a", "[1]", "[4, 8]")), two),
       "header:1:63: duplicate key \"a\""},
      {"metadata not strings", file_from(R"({"__metadata__": {"run": 3}})", ""),
       "__metadata__.run is not a string"},
      {"metadata not an object", file_from(R"({"__metadata__": "x"})", ""),
       "__metadata__ is not an object"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    try {
      ra::formats::decode_safetensors(c.bytes, "run-001/weights-final.safetensors");
      FAIL("expected InputError");
    } catch (const ra::InputError& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("run-001/weights-final.safetensors"));
      CHECK_THAT(what, Catch::Contains(c.expected));
    }
  }

  const fs::path missing = fs::temp_directory_path() / "ra_missing_snapshot.safetensors";
  CHECK_THROWS_WITH(ra::formats::read_safetensors(missing),
                    Catch::Contains(missing.string()) && Catch::Contains("No such file"));
  // Special files are refused, not read forever.
  CHECK_THROWS_WITH(ra::formats::read_safetensors("/dev/zero"),
                    Catch::Contains("/dev/zero: is a character device"));
}
