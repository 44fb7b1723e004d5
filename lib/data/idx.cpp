#include "data/idx.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/tensor.h"
#include "data/byte_reader.h"

namespace ra::data {
namespace {

constexpr std::uint8_t kTypeUnsignedByte = 0x08;
constexpr int kMaxDims = 4;
// Above any data set this tool trains on (Fashion-MNIST train: 47 MB) by ~350x; a header that
// declares more is corrupt, and refusing it avoids a multi-GiB allocation for a broken file.
constexpr std::int64_t kMaxDataBytes = std::int64_t{1} << 34;  // 16 GiB
// Gzip data is read in 16 MiB chunks into a buffer that only grows as data actually arrives, so a
// corrupt header in a small .gz file cannot make us allocate what the header claims.
constexpr std::size_t kChunkBytes = std::size_t{16} << 20;
constexpr std::size_t kMaxUpfrontReserve = std::size_t{256} << 20;

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

IdxArray read_idx(const std::string& path) {
  ByteReader in(path);

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

  IdxArray array;
  std::int64_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    std::uint8_t be[4];
    if (in.read(be, 4) != 4) fail(path, "truncated IDX header (dimension sizes cut off)");
    const std::int64_t size = (std::int64_t{be[0]} << 24) | (std::int64_t{be[1]} << 16) |
                              (std::int64_t{be[2]} << 8) | std::int64_t{be[3]};
    if (size == 0) fail(path, "IDX dimension " + std::to_string(d) + " is zero");
    array.dims.push_back(size);
    // Checked by division before multiplying: total <= 2^34 and size < 2^32 could overflow
    // int64 (2^66) if multiplied first.
    if (total > kMaxDataBytes / size) {
      fail(path, "IDX dimensions declare more than 16 GiB of data; the header is corrupt");
    }
    total *= size;
  }
  const std::string dims_text = to_string(array.dims);

  // Raw files: compare with the file size first, so a corrupt header fails before allocating.
  if (!in.compressed()) {
    std::error_code ec;
    const auto file_bytes = std::filesystem::file_size(path, ec);
    const std::int64_t header_bytes = 4 + 4 * std::int64_t{ndim};
    if (!ec && static_cast<std::int64_t>(file_bytes) < header_bytes + total) {
      fail(path, "truncated: dims " + dims_text + " need " + std::to_string(total) +
                     " data bytes, the file holds " +
                     std::to_string(static_cast<std::int64_t>(file_bytes) - header_bytes));
    }
  }

  const auto expected = static_cast<std::size_t>(total);
  array.bytes.reserve(std::min(expected, kMaxUpfrontReserve));
  std::size_t have = 0;
  while (have < expected) {
    const std::size_t want = std::min(kChunkBytes, expected - have);
    array.bytes.resize(have + want);
    const std::size_t got = in.read(array.bytes.data() + have, want);
    have += got;
    if (got < want) break;
  }
  if (have < expected) {
    fail(path, "truncated: dims " + dims_text + " need " + std::to_string(total) +
                   " data bytes, the file holds " + std::to_string(have));
  }
  // Reading one byte past the data also makes zlib check the gzip trailer (CRC-32 and length),
  // which is what catches a stream corrupted in a way that still inflates.
  std::uint8_t extra;
  if (in.read(&extra, 1) != 0) {
    fail(path, "trailing bytes after the " + std::to_string(total) + " data bytes that dims " +
                   dims_text + " declare");
  }
  return array;
}

}  // namespace ra::data
