#pragma once
// Test fixtures for the data tests: a temporary folder removed on destruction, and IDX files
// built byte by byte here (independently of the reader) and written raw or gzip-compressed.
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

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

}  // namespace ra::data::testing
