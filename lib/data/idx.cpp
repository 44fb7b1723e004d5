#include "data/idx.h"

#include <algorithm>
#include <cstdio>

#include "core/byte_reader.h"
#include "core/error.h"
#include "core/tensor.h"
#include "data/file_bytes.h"

namespace ra::data {
namespace {

constexpr std::uint8_t kTypeUnsignedByte = 0x08;
constexpr int kMaxDims = 4;

std::string hex_byte(std::uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(b));
  return buf;
}

const char* idx_type_name(std::uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "short";
    case 0x0C:
      return "int";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "unknown";
  }
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(path + ": " + what);
}

}  // namespace

IdxReader::IdxReader(std::string file_path)
    : path_(std::move(file_path)), in_(std::make_unique<ByteReader>(path_)) {
  ByteReader& in = *in_;
  const std::string& path = path_;
  std::uint8_t magic[4];
  if (in.read(magic, 4) != 4) fail(path, "not an IDX file (shorter than its 4-byte magic)");
  if (magic[0] != 0 || magic[1] != 0) {
    fail(path, "not an IDX file (magic must start with two zero bytes, found " +
                   hex_byte(magic[0]) + " " + hex_byte(magic[1]) + ")");
  }
  if (magic[2] != kTypeUnsignedByte) {
    fail(path, "IDX element type " + hex_byte(magic[2]) + " (" + idx_type_name(magic[2]) +
                   ") is not supported; expected 0x08 (unsigned byte)");
  }
  const int ndim = magic[3];
  if (ndim < 1 || ndim > kMaxDims) {
    fail(path, "IDX header declares " + std::to_string(ndim) + " dimensions; expected 1 to " +
                   std::to_string(kMaxDims));
  }

  std::int64_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    std::uint8_t be[4];
    if (in.read(be, 4) != 4) fail(path, "truncated IDX header (dimension sizes cut off)");
    const std::int64_t size = (std::int64_t{be[0]} << 24) | (std::int64_t{be[1]} << 16) |
                              (std::int64_t{be[2]} << 8) | std::int64_t{be[3]};
    if (size == 0) fail(path, "IDX dimension " + std::to_string(d) + " is zero");
    dims_.push_back(size);
    // Checked by division before multiplying, so the product of up to four 32-bit dims (2^128)
    // never overflows: the check stops it at the cap.
    if (total > kMaxIdxDataBytes / size) {
      std::string declared = to_string(dims_);
      if (d + 1 < ndim) declared.insert(declared.size() - 1, ", ...");
      fail(path, "IDX header declares more than 1 GiB of data (dims " + declared +
                     "); this tool reads at most 1 GiB from one IDX file");
    }
    total *= size;
  }
  data_bytes_ = total;

  // Raw files: compare with the file size first, so a corrupt header fails before allocating.
  if (!in.compressed()) {
    const auto file_bytes = static_cast<std::int64_t>(in.file_bytes());
    const std::int64_t header_bytes = 4 + 4 * std::int64_t{ndim};
    if (file_bytes < header_bytes + total) {
      fail(path, "truncated: dims " + to_string(dims_) + " need " + std::to_string(total) +
                     " data bytes, the file holds " + std::to_string(file_bytes - header_bytes));
    }
  }
}

IdxReader::~IdxReader() = default;

std::vector<std::uint8_t> IdxReader::read_data() {
  const std::string& path = path_;
  std::vector<std::uint8_t> bytes;
  const std::size_t have = read_chunked(*in_, bytes, static_cast<std::size_t>(data_bytes_));
  if (have < static_cast<std::size_t>(data_bytes_)) {
    fail(path, "truncated: dims " + to_string(dims_) + " need " + std::to_string(data_bytes_) +
                   " data bytes, the file holds " + std::to_string(have));
  }
  if (has_more(*in_)) {
    fail(path, "trailing bytes after the " + std::to_string(data_bytes_) +
                   " data bytes that dims " + to_string(dims_) + " declare");
  }
  return bytes;
}

IdxArray read_idx(const std::string& path) {
  IdxReader reader(path);
  IdxArray array;
  array.dims = reader.dims();
  array.bytes = reader.read_data();
  return array;
}

}  // namespace ra::data
