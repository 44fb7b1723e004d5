#include "formats/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/text_excerpt.h"
#include "formats/json_text.h"

namespace ra::formats {
namespace {

// The format is little-endian; on a little-endian host the tensor bytes are the file bytes, so
// both directions are one memcpy. Every platform repro-audit targets (x86-64, aarch64) is.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::size_t kLengthBytes = 8;

void put_u64_le(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::uint64_t get_u64_le(std::string_view bytes) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

// One tensor entry of a header, validated but not yet checked against its neighbours.
struct Entry {
  std::string name;
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

class Decoder {
 public:
  Decoder(std::string_view bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  SafetensorsFile decode() {
    if (bytes_.size() < kLengthBytes) {
      fail("short header: " + std::to_string(bytes_.size()) +
           " bytes, expected at least 8 (the header length)");
    }
    const std::uint64_t header_length = get_u64_le(bytes_);
    if (header_length > bytes_.size() - kLengthBytes) {
      fail("header length " + std::to_string(header_length) + " goes beyond the end of the file (" +
           std::to_string(bytes_.size() - kLengthBytes) + " bytes after the length)");
    }
    const std::string_view header = bytes_.substr(kLengthBytes, header_length);
    const std::string_view data = bytes_.substr(kLengthBytes + header_length);

    SafetensorsFile file;
    std::vector<Entry> entries;
    const nlohmann::json json = parse_header(header);
    for (const auto& [key, value] : json.items()) {
      if (key == kMetadataKey) {
        file.metadata = parse_metadata(value);
      } else {
        entries.push_back(parse_entry(key, value));
      }
    }
    check_layout(entries, data.size());

    file.tensors.reserve(entries.size());
    for (Entry& e : entries) {
      Tensor t(std::move(e.shape));
      if (t.bytes() > 0) std::memcpy(t.data(), data.data() + e.begin, t.bytes());
      file.tensors.emplace_back(std::move(e.name), std::move(t));
    }
    return file;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ": not a valid safetensors file: " + what);
  }

  nlohmann::json parse_header(std::string_view header) const {
    // The strict parser refuses duplicate keys (nlohmann alone keeps the last, so a repeated
    // tensor name would hide a tensor), numbers out of range and deep nesting, and locates the
    // problem in the header text: "header:1:38: duplicate key ...".
    nlohmann::json json;
    try {
      json = parse_json_text(header, "header");
    } catch (const InputError& e) {
      fail(e.what());
    }
    if (!json.is_object()) fail("header is not a JSON object");
    return json;
  }

  std::map<std::string, std::string> parse_metadata(const nlohmann::json& value) const {
    if (!value.is_object()) fail("__metadata__ is not an object of strings");
    std::map<std::string, std::string> metadata;
    for (const auto& [key, v] : value.items()) {
      if (!v.is_string()) fail("__metadata__." + excerpt(key) + " is not a string");
      metadata[key] = v.get<std::string>();
    }
    return metadata;
  }

  Entry parse_entry(const std::string& name, const nlohmann::json& value) const {
    const std::string where = "tensor \"" + excerpt(name) + "\": ";
    if (!value.is_object()) fail(where + "entry is not an object");
    Entry e;
    e.name = name;
    const auto dtype = value.find("dtype");
    if (dtype == value.end() || !dtype->is_string()) fail(where + "missing \"dtype\" string");
    if (*dtype != "F32") {
      fail(where + "dtype " + excerpt(dtype->get<std::string>()) +
           " is not supported (expected F32)");
    }

    const auto shape = value.find("shape");
    if (shape == value.end() || !shape->is_array()) fail(where + "missing \"shape\" array");
    // Element count with overflow checks: a corrupt header must not wrap around to a small size.
    std::uint64_t count = 1;
    bool overflow = false;
    for (const nlohmann::json& d : *shape) {
      if (!d.is_number_unsigned())
        fail(where + "shape " + json_excerpt(*shape) + " is not a list of sizes");
      const std::uint64_t dim = d.get<std::uint64_t>();
      if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        overflow = true;
      if (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / 4 / dim) overflow = true;
      count = overflow ? 0 : count * dim;
      e.shape.push_back(static_cast<std::int64_t>(dim));
    }
    if (overflow) fail(where + "shape " + json_excerpt(*shape) + " is too large");

    const auto offsets = value.find("data_offsets");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
      fail(where + "\"data_offsets\" is not a pair of byte offsets");
    }
    e.begin = (*offsets)[0].get<std::uint64_t>();
    e.end = (*offsets)[1].get<std::uint64_t>();
    if (e.end < e.begin)
      fail(where + "data_offsets " + json_excerpt(*offsets) + " end before they begin");
    if (e.end - e.begin != count * sizeof(float)) {
      fail(where + "data_offsets " + json_excerpt(*offsets) + " span " +
           std::to_string(e.end - e.begin) + " bytes, but shape " + json_excerpt(*shape) +
           " of F32 needs " + std::to_string(count * sizeof(float)));
    }
    return e;
  }

  // Sorted by offset, the tensors must tile [0, data_size) exactly: the first begins at 0, each
  // begins where the previous ends, the last ends at the end of the file.
  void check_layout(std::vector<Entry>& entries, std::uint64_t data_size) const {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t expected = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
      const std::string where = "tensor \"" + excerpt(e.name) + "\": ";
      if (e.end > data_size) {
        fail(where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
             "] go beyond the " + std::to_string(data_size) + " bytes of data");
      }
      if (e.begin < expected) {
        fail(where + "data overlaps tensor \"" + excerpt(previous->name) + "\"");
      }
      if (e.begin > expected) {
        fail(where + "data begins at byte " + std::to_string(e.begin) + ", expected " +
             std::to_string(expected) + " (a gap after the previous tensor)");
      }
      expected = e.end;
      previous = &e;
    }
    if (expected != data_size) {
      fail(std::to_string(data_size - expected) + " trailing bytes after the last tensor");
    }
  }

  std::string_view bytes_;
  const std::string& source_;
};

}  // namespace

std::string encode_safetensors(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps the header in layout order, which makes files easy to read by eye.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) m[key] = value;
    header[std::string(kMetadataKey)] = std::move(m);
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const NamedTensor& nt : tensors) {
    if (nt.name.empty() || nt.name == kMetadataKey || !names.insert(nt.name).second) {
      throw std::invalid_argument("write_safetensors: tensor name \"" + nt.name +
                                  "\" is empty, reserved or repeated");
    }
    if (nt.tensor == nullptr ||
        static_cast<std::int64_t>(nt.tensor->size()) != element_count(nt.tensor->shape())) {
      throw std::invalid_argument("write_safetensors: tensor \"" + nt.name +
                                  "\" is null or its size does not match its shape");
    }
    const std::uint64_t bytes = nt.tensor->bytes();
    header[nt.name] = {{"dtype", "F32"},
                       {"shape", nt.tensor->shape()},
                       {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  // Pad with spaces (valid JSON whitespace) so the data starts 8-byte aligned: 8 + N ≡ 0 (mod 8).
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(kLengthBytes + json.size() + offset);
  put_u64_le(out, json.size());
  out += json;
  for (const NamedTensor& nt : tensors) {
    out.append(reinterpret_cast<const char*>(nt.tensor->data()), nt.tensor->bytes());
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, encode_safetensors(tensors, metadata));
}

SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& source) {
  return Decoder(bytes, source).decode();
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  return decode_safetensors(bytes, path.string());
}

const Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

}  // namespace ra::formats
