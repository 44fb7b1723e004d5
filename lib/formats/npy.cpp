#include "formats/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <variant>

#include "core/atomic_file.h"
#include "core/byte_reader.h"
#include "core/error.h"
#include "core/text_excerpt.h"

namespace ra::formats {
namespace {

static_assert(std::endian::native == std::endian::little, ".npy I/O assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kAlignment = 64;
// NumPy >= 1.23 reserves room for the first dimension to grow to 21 digits (appending to a file
// in place rewrites the shape); writing the same spaces makes our files byte-identical to np.save.
constexpr std::size_t kGrowthDigits = 21;

std::string shape_literal(const Shape& shape) {
  // Python tuple syntax: "()" "(3,)" "(2, 3)".
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// A Python literal as found in a .npy header: a string, a bool, or a tuple of integers.
using Literal = std::variant<std::string, bool, Shape>;

// Parses the restricted Python dict literal of a .npy header: string keys; values that are
// strings, True/False, or tuples of non-negative integers; trailing commas allowed.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  std::map<std::string, Literal> parse() {
    std::map<std::string, Literal> dict;
    expect('{');
    while (!peek_is('}')) {
      std::string key = parse_string();
      expect(':');
      Literal value = parse_value();
      if (!dict.emplace(key, std::move(value)).second)
        fail("key '" + excerpt(key) + "' appears twice");
      if (!peek_is('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the header dict");
    return dict;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ": not a valid .npy file: header at character " +
                     std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool peek_is(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!peek_is(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      fail("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  Literal parse_value() {
    skip_space();
    if (peek_is('\'') || peek_is('"')) return parse_string();
    if (peek_is('(')) return parse_tuple();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += std::strlen(word);
        return value;
      }
    }
    fail("expected a string, True, False or a tuple");
  }
  Shape parse_tuple() {
    expect('(');
    Shape dims;
    while (!peek_is(')')) {
      std::int64_t v = 0;
      const std::size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const int digit = text_[pos_++] - '0';
        if (v > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
          fail("dimension too large");
        v = v * 10 + digit;
      }
      if (pos_ == start) fail("expected a non-negative integer");
      // Python 2 era writers appended 'L' to longs: "(3L,)".
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      dims.push_back(v);
      if (!peek_is(')')) expect(',');
    }
    expect(')');
    return dims;
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

[[noreturn]] void fail_npy(const std::string& source, const std::string& what) {
  throw InputError(source + ": not a valid .npy file: " + what);
}

}  // namespace

std::string encode_npy_int64(const std::vector<std::int64_t>& values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != element_count(shape)) {
    throw std::invalid_argument("write_npy_int64: " + std::to_string(values.size()) +
                                " values do not fill shape " + to_string(shape));
  }
  std::string header =
      "{'descr': '<i8', 'fortran_order': False, 'shape': " + shape_literal(shape) + ", }";
  if (!shape.empty()) {
    const std::size_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthDigits) header.append(kGrowthDigits - digits, ' ');
  }
  // 10 bytes of magic, version and length, then the header and its '\n': pad to a multiple of 64
  // so the data is aligned for memory mapping (what NumPy does).
  const std::size_t unpadded = kMagic.size() + 2 + 2 + header.size() + 1;
  header.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  header += '\n';
  if (header.size() > 0xFFFF) {
    throw std::invalid_argument("write_npy_int64: shape " + to_string(shape) +
                                " needs a header longer than format 1.0 allows");
  }
  std::string out;
  out.reserve(kMagic.size() + 4 + header.size() + values.size() * 8);
  out += kMagic;
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(std::int64_t));
  return out;
}

void write_npy_int64(const std::filesystem::path& path, const std::vector<std::int64_t>& values,
                     Shape shape) {
  write_file_atomic(path, encode_npy_int64(values, shape));
}

namespace {

// Where the header of a .npy file lies: after the magic, the version and the header length.
struct NpyPreamble {
  std::size_t header_offset = 0;
  std::uint64_t header_length = 0;
};

NpyPreamble read_preamble(std::string_view bytes, const std::string& source) {
  if (bytes.size() < kMagic.size() + 2 || !bytes.starts_with(kMagic)) {
    fail_npy(source, "does not start with \"\\x93NUMPY\"");
  }
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i]));
  };
  const std::uint64_t major = byte(6);
  // Version 1.0: 2-byte header length; 2.0 and 3.0 (UTF-8 header): 4-byte length.
  const std::size_t length_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (length_bytes == 0) {
    fail_npy(source, "format version " + std::to_string(major) + "." + std::to_string(byte(7)) +
                         " is not supported (expected 1.0, 2.0 or 3.0)");
  }
  NpyPreamble preamble;
  preamble.header_offset = kMagic.size() + 2 + length_bytes;
  if (bytes.size() < preamble.header_offset) fail_npy(source, "file ends inside the header length");
  for (std::size_t i = 0; i < length_bytes; ++i) preamble.header_length |= byte(8 + i) << (8 * i);
  if (preamble.header_length > bytes.size() - preamble.header_offset) {
    fail_npy(source, "header length " + std::to_string(preamble.header_length) +
                         " goes beyond the end of the file");
  }
  return preamble;
}

// The three keys of the header's dict, each of its type.
NpyHeader header_fields(std::string_view header, const std::string& source) {
  const auto dict = HeaderParser(header, source).parse();
  const auto get = [&](const char* key) -> const Literal& {
    const auto it = dict.find(key);
    if (it == dict.end()) fail_npy(source, std::string("header has no '") + key + "'");
    return it->second;
  };
  if (dict.size() != 3)
    fail_npy(source, "header must have exactly the keys descr, fortran_order, shape");
  NpyHeader h;
  const auto* descr = std::get_if<std::string>(&get("descr"));
  if (!descr) fail_npy(source, "'descr' is not a string");
  h.descr = *descr;
  const auto* fortran = std::get_if<bool>(&get("fortran_order"));
  if (!fortran) fail_npy(source, "'fortran_order' is not True or False");
  h.fortran_order = *fortran;
  const auto* shape = std::get_if<Shape>(&get("shape"));
  if (!shape) fail_npy(source, "'shape' is not a tuple of integers");
  h.shape = *shape;
  return h;
}

// The shape of the header's dict, after checking that it describes C-ordered little-endian int64.
Shape shape_of_int64_header(std::string_view header, const std::string& source) {
  const NpyHeader h = header_fields(header, source);
  if (h.descr != "<i8")
    fail_npy(source, "dtype '" + excerpt(h.descr) + "' is not supported (expected '<i8', int64)");
  if (h.fortran_order) fail_npy(source, "fortran_order True is not supported (expected C order)");
  return h.shape;
}

// The element count of `shape`, which must match the data bytes present. It is computed with an
// overflow check, so a corrupt shape like (2**40, 2**40) is reported as needing more data instead
// of wrapping around.
std::uint64_t element_count_for(const Shape& shape, std::uint64_t data_bytes,
                                const std::string& source) {
  const std::uint64_t fits = data_bytes / 8;
  // NumPy refuses ("array is too big") a shape whose nonzero dimensions multiply beyond what its
  // byte count can address, even when a zero dimension makes the array empty; so does this
  // reader, so that element_count(shape) of what it returns cannot overflow: (2**62, 2**62, 0)
  // would otherwise be read as an empty array.
  constexpr std::uint64_t kMaxElements = std::numeric_limits<std::int64_t>::max() / 8;
  std::uint64_t count = 1;  // of the nonzero dimensions, at most kMaxElements
  bool empty = false, overflow = false;
  for (std::int64_t d : shape) {
    const auto dim = static_cast<std::uint64_t>(d);
    if (dim == 0) {
      empty = true;
    } else if (overflow || count > kMaxElements / dim) {
      overflow = true;
    } else {
      count *= dim;
    }
  }
  if (overflow && empty) {
    fail_npy(source, "shape " + to_string(shape) + " is too large (its nonzero dimensions " +
                         "multiply beyond 2^60 elements)");
  }
  if (empty) count = 0;
  if (overflow || count > fits) {
    fail_npy(source, "shape " + to_string(shape) + " needs more data than the " +
                         std::to_string(data_bytes) + " bytes present (truncated)");
  }
  if (count * 8 != data_bytes) {
    fail_npy(source, "shape " + to_string(shape) + " needs " + std::to_string(count * 8) +
                         " bytes of data, found " + std::to_string(data_bytes) +
                         " (trailing bytes)");
  }
  return count;
}

}  // namespace

std::vector<std::int64_t> decode_npy_int64(std::string_view bytes, const std::string& source,
                                           Shape* shape_out) {
  const NpyPreamble preamble = read_preamble(bytes, source);
  const Shape shape =
      shape_of_int64_header(bytes.substr(preamble.header_offset, preamble.header_length), source);
  const std::size_t data_offset = preamble.header_offset + preamble.header_length;
  const std::uint64_t count = element_count_for(shape, bytes.size() - data_offset, source);
  std::vector<std::int64_t> values(count);
  if (count > 0) std::memcpy(values.data(), bytes.data() + data_offset, count * 8);
  if (shape_out) *shape_out = shape;
  return values;
}

std::vector<std::int64_t> read_npy_int64(const std::filesystem::path& path, Shape* shape) {
  const std::string bytes = read_file(path);
  return decode_npy_int64(bytes, path.string(), shape);
}

NpyHeader read_npy_header(ByteReader& in) {
  const std::string& source = in.path();
  // Magic string and version, then the header's length: 2 bytes (1.0) or 4 (2.0, 3.0).
  std::string preamble(kMagic.size() + 2, '\0');
  const std::size_t got = in.read(preamble.data(), preamble.size());
  const std::string_view present = std::string_view(preamble).substr(0, got);
  if (got == 0 || !kMagic.starts_with(present.substr(0, std::min(got, kMagic.size())))) {
    fail_npy(source, "does not start with \"\\x93NUMPY\"");
  }
  if (got < preamble.size()) {
    fail_npy(source, "truncated: the file ends after " + std::to_string(got) +
                         " bytes, inside the magic string and version");
  }
  const auto major = static_cast<unsigned char>(preamble[6]);
  const std::size_t length_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (length_bytes == 0) {
    fail_npy(source, "format version " + std::to_string(major) + "." +
                         std::to_string(static_cast<unsigned char>(preamble[7])) +
                         " is not supported (expected 1.0, 2.0 or 3.0)");
  }
  unsigned char length[4] = {0, 0, 0, 0};
  if (in.read(length, length_bytes) != length_bytes) {
    fail_npy(source, "truncated: the file ends inside the header length");
  }
  std::uint64_t header_length = 0;
  for (std::size_t i = 0; i < length_bytes; ++i)
    header_length |= std::uint64_t{length[i]} << (8 * i);
  if (header_length > kMaxNpyHeaderBytes) {
    fail_npy(source, "header length " + std::to_string(header_length) + " is beyond the " +
                         std::to_string(kMaxNpyHeaderBytes) + " bytes this reader accepts");
  }
  std::string header(header_length, '\0');
  const std::size_t header_got = in.read(header.data(), header.size());
  if (header_got < header.size()) {
    fail_npy(source, "truncated: the header declares " + std::to_string(header_length) +
                         " bytes, the file ends after " + std::to_string(header_got));
  }
  NpyHeader h = header_fields(header, source);
  h.data_offset = preamble.size() + length_bytes + header_length;
  return h;
}

std::size_t npy_item_bytes(std::string_view descr) {
  // '<f4', '|u1', '>i8': byte order, kind, size in bytes.
  if (descr.size() != 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos ||
      std::string_view("biuf").find(descr[1]) == std::string_view::npos) {
    return 0;
  }
  switch (descr[2]) {
    case '1':
      return 1;
    case '2':
      return 2;
    case '4':
      return 4;
    case '8':
      return 8;
    default:
      return 0;
  }
}

}  // namespace ra::formats
