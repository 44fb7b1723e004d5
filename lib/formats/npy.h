#pragma once
// NumPy .npy files of int64 (batch sample indices, step counters), so `numpy.load` opens what an
// audit wrote. Format version 1.0 (numpy/lib/format.py):
//   "\x93NUMPY" 0x01 0x00, header length H (uint16 little-endian), H bytes of header: a Python
//   dict literal {'descr': '<i8', 'fortran_order': False, 'shape': (d0, d1, ), } padded with
//   spaces and ended by '\n' so that 10 + H is a multiple of 64; then the elements, little-endian,
//   C order.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/byte_reader.h"
#include "core/tensor.h"

namespace ra::formats {

// Atomic write (write_file_atomic; RuntimeFailure on I/O errors). values.size() must equal
// element_count(shape) (std::invalid_argument otherwise). The bytes equal what NumPy >= 1.23's
// np.save writes for the same array, including the spaces it reserves after the header so the
// first dimension can grow in place.
void write_npy_int64(const std::filesystem::path& path, const std::vector<std::int64_t>& values,
                     Shape shape);
std::string encode_npy_int64(const std::vector<std::int64_t>& values, const Shape& shape);

// Reads a .npy of dtype '<i8' in C order (format versions 1.0, 2.0 and 3.0 are read). `shape`,
// when not null, receives the array's shape. ra::InputError naming the file on: a missing file,
// a wrong magic string or version, a header length beyond the file, a header that is not the
// dict literal NumPy writes, another dtype, fortran_order True, and data shorter or longer than
// the shape says.
std::vector<std::int64_t> read_npy_int64(const std::filesystem::path& path, Shape* shape);
std::vector<std::int64_t> decode_npy_int64(std::string_view bytes, const std::string& source,
                                           Shape* shape);

// The header of a .npy file: its dict literal's three keys, and where the data starts.
struct NpyHeader {
  std::string descr;  // the dtype as NumPy writes it: '<f4' float32, '|u1' uint8, '<i8' int64
  bool fortran_order = false;
  Shape shape;
  std::uint64_t data_offset = 0;  // bytes of magic, version, header length and header
};

// The longest header read_npy_header reads. NumPy writes about 128 bytes (a shape of 32
// dimensions needs under 1 KB) and since 1.24.3 refuses to read more than 10,000 by default;
// a corrupt 4-byte length (format 2.0) could otherwise claim 4 GiB.
inline constexpr std::uint64_t kMaxNpyHeaderBytes = std::uint64_t{1} << 20;

// Reads the preamble and header of a .npy file (format 1.0, 2.0 or 3.0) from `in`, leaving it at
// the first data byte, and checks nothing of the data. ra::InputError naming in.path() for: a
// wrong magic string or version, a file that ends inside the preamble or the header ("truncated:
// the header declares 118 bytes, the file ends after 40"), a header longer than
// kMaxNpyHeaderBytes, a header that is not the dict literal NumPy writes with exactly the keys
// descr (a string), fortran_order (True or False) and shape (a tuple of integers).
NpyHeader read_npy_header(ByteReader& in);

// Bytes per element of a plain numeric descr ('|u1' 1, '<f4' 4, '<i8' 8: kinds b, i, u and f of
// 1, 2, 4 or 8 bytes, any byte order); 0 for anything else (strings, records, complex numbers).
std::size_t npy_item_bytes(std::string_view descr);

}  // namespace ra::formats
