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

}  // namespace ra::formats
