#pragma once
// IDX files, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
//   bytes 0-1  zero
//   byte  2    element type (0x08 = unsigned byte; the only type these data sets use)
//   byte  3    number of dimensions, 1..4 here
//   then one big-endian uint32 per dimension, then the elements in row-major order.
// Files may be raw or gzip-compressed; the reader decides by the gzip magic, not the name.
#include <cstdint>
#include <string>
#include <vector>

namespace ra::data {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> bytes;  // element type 0x08 (unsigned byte) only
};

// Reads a whole IDX file. InputError naming the file for: missing or unreadable file; bad magic
// (first two bytes not zero, type byte not 0x08, ndim outside 1..4); a zero or absurd dimension
// (total above 16 GiB); truncated data (fewer bytes than the dims require); trailing bytes after
// the data; a corrupt or cut-off gzip stream.
IdxArray read_idx(const std::string& path);

}  // namespace ra::data
