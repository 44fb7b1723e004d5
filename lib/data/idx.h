#pragma once
// IDX files, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
//   bytes 0-1  zero
//   byte  2    element type (0x08 = unsigned byte; the only type these data sets use)
//   byte  3    number of dimensions, 1..4 here
//   then one big-endian uint32 per dimension, then the elements in row-major order.
// Files may be raw or gzip-compressed; the reader decides by the gzip magic, not the name.
//
// The header is read and checked before any data: a file whose header declares more than
// kMaxIdxDataBytes, or a shape its user refuses (IdxReader::dims), costs a few bytes of reading,
// never an inflated gzip bomb. Data is read up to the declared size and one byte more; that byte
// must not exist (trailing bytes are an error, docs/spec.md).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/byte_reader.h"
#include "data/file_bytes.h"

namespace ra::data {

// 1 GiB of unsigned bytes (data/file_bytes.h): a header declaring more is refused before reading.
inline constexpr std::int64_t kMaxIdxDataBytes = kMaxDataFileBytes;

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> bytes;  // element type 0x08 (unsigned byte) only
};

// An IDX file whose header has been read and checked, and whose data has not been read yet.
class IdxReader {
 public:
  // Opens `path` and reads the header. InputError naming the file for: missing, unreadable or not
  // a regular file; bad magic (first two bytes not zero, type byte not 0x08, ndim outside 1..4);
  // a zero dimension; dims declaring more than kMaxIdxDataBytes; a raw file shorter than its dims
  // need; a header cut off.
  explicit IdxReader(std::string path);
  ~IdxReader();
  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;

  const std::string& path() const noexcept { return path_; }
  const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
  std::int64_t data_bytes() const noexcept { return data_bytes_; }

  // Reads the data the header declares. InputError naming the file for: truncated data (fewer
  // bytes than the dims need), trailing bytes after them, a corrupt or cut-off gzip stream.
  std::vector<std::uint8_t> read_data();

 private:
  std::string path_;
  std::unique_ptr<ByteReader> in_;
  std::vector<std::int64_t> dims_;
  std::int64_t data_bytes_ = 0;
};

// Reads a whole IDX file: IdxReader's header checks, then its data.
IdxArray read_idx(const std::string& path);

}  // namespace ra::data
