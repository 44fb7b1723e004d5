#pragma once
// Sequential reader of a file's bytes that hides whether the file is raw or gzip-compressed.
// The choice is made by content (the gzip magic 1f 8b), never by the file name: Debian's
// Fashion-MNIST is .gz, a user's own export may be raw, and a renamed file must still load.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ra {

class ByteReader {
 public:
  // Opens `path`; InputError naming the file when it is missing, unreadable or not a regular file
  // (a directory, a FIFO, a device like /dev/zero: see core/input_file.h).
  explicit ByteReader(std::string path);
  ~ByteReader();
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  const std::string& path() const noexcept { return path_; }
  bool compressed() const noexcept;
  // The size of the file on disk (compressed size for gzip), as stat reported it at open.
  std::uint64_t file_bytes() const noexcept { return file_bytes_; }

  // Reads up to `size` bytes into `out`, looping over short reads; returns the count read, which
  // is less than `size` only at the end of the (decompressed) data. InputError naming the file
  // for a read error or a corrupt gzip stream (bad deflate data, CRC mismatch, cut-off stream).
  std::size_t read(void* out, std::size_t size);

 private:
  struct Source;  // raw FILE* or gzFile; defined in the .cpp so that zlib.h stays private
  std::string path_;
  std::unique_ptr<Source> source_;
  std::uint64_t file_bytes_ = 0;
};

}  // namespace ra
