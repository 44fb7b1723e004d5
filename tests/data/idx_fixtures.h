#pragma once
// Test fixtures for the data tests: a temporary folder removed on destruction, IDX files built
// byte by byte here (independently of the reader) and written raw or gzip-compressed, and the
// error a data set's loading raised.
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "data/dataset.h"

namespace ra::data::testing {

using Bytes = std::vector<std::uint8_t>;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("ra-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The IDX header: 00 00 <type> <ndim>, then each dim as a big-endian uint32.
inline Bytes idx_header(const std::vector<std::uint32_t>& dims, std::uint8_t type = 0x08) {
  Bytes b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    b.push_back(static_cast<std::uint8_t>(d >> 24));
    b.push_back(static_cast<std::uint8_t>(d >> 16));
    b.push_back(static_cast<std::uint8_t>(d >> 8));
    b.push_back(static_cast<std::uint8_t>(d));
  }
  return b;
}

inline Bytes idx_file(const std::vector<std::uint32_t>& dims, const Bytes& data) {
  Bytes b = idx_header(dims);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

inline void write_raw(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write fixture " + path);
}

inline Bytes read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A gzip file (one member) holding `bytes`, the way `gzip` would write it.
inline void write_gz(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb1");
  if (!f) throw std::runtime_error("cannot write fixture " + path);
  const int n = bytes.empty() ? 0 : gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  if (n != static_cast<int>(bytes.size())) throw std::runtime_error("gzwrite failed: " + path);
}

// `in` as raw deflate data that starts a fresh block at a byte boundary and refers to nothing
// before it (a fresh stream), ending byte-aligned and not final (Z_FULL_FLUSH) or final
// (Z_FINISH). Such pieces can be concatenated into one valid deflate stream.
inline Bytes raw_deflate_piece(const Bytes& in, int flush) {
  z_stream s{};
  if (deflateInit2(&s, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  Bytes out(deflateBound(&s, static_cast<uLong>(in.size())) + 64);
  s.next_in = const_cast<Bytef*>(in.data());
  s.avail_in = static_cast<uInt>(in.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&s, flush);
  const bool done = s.avail_in == 0 && (flush == Z_FINISH ? rc == Z_STREAM_END : rc == Z_OK);
  out.resize(out.size() - s.avail_out);
  deflateEnd(&s);
  if (!done) throw std::runtime_error("raw deflate failed");
  return out;
}

// A valid gzip file holding `prefix` followed by `zeros` zero bytes, made in time and space that
// do not grow with `zeros`: 1 MiB of zeros is deflated once (about 1 KB) and the piece repeated,
// the CRC-32 combined arithmetically. This is a gzip bomb: 4 GiB of zeros fit in about 4 MB.
inline void write_gz_zeros(const std::string& path, const Bytes& prefix, std::uint64_t zeros) {
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  std::ofstream out(path, std::ios::binary);
  const auto put = [&](const Bytes& b) {
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  put({0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3});  // gzip header: deflate, no name, no mtime, Unix
  put(raw_deflate_piece(prefix, Z_FULL_FLUSH));
  uLong crc = crc32(0L, prefix.data(), static_cast<uInt>(prefix.size()));
  const Bytes chunk_zeros(kChunk, 0);
  const Bytes chunk = raw_deflate_piece(chunk_zeros, Z_FULL_FLUSH);
  const uLong chunk_crc = crc32(0L, chunk_zeros.data(), static_cast<uInt>(kChunk));
  for (std::uint64_t i = 0; i < zeros / kChunk; ++i) {
    put(chunk);
    crc = crc32_combine(crc, chunk_crc, static_cast<z_off_t>(kChunk));
  }
  const Bytes rest_zeros(zeros % kChunk, 0);
  put(raw_deflate_piece(rest_zeros, Z_FULL_FLUSH));
  crc = crc32_combine(crc, crc32(0L, rest_zeros.data(), static_cast<uInt>(rest_zeros.size())),
                      static_cast<z_off_t>(rest_zeros.size()));
  put(raw_deflate_piece({}, Z_FINISH));
  const std::uint64_t size = prefix.size() + zeros;  // ISIZE: the length mod 2^32
  Bytes trailer;
  for (const std::uint64_t v : {std::uint64_t{crc}, size}) {
    for (int i = 0; i < 4; ++i) trailer.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  put(trailer);
  if (!out) throw std::runtime_error("cannot write fixture " + path);
}

// The InputError loading `spec` as `role` raised, in words, or "(no InputError)".
inline std::string input_error_message(const spec::DatasetSpec& spec, const char* role = "train") {
  try {
    load_dataset(spec, 1.0f, role);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

}  // namespace ra::data::testing
