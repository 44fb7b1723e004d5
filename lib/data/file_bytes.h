#pragma once
// Reading a data file's declared bytes, for the readers of lib/data (IDX, CIFAR-10, npy): in
// chunks into a buffer that grows only as data arrives, so that a corrupt header in a small .gz
// file cannot make us allocate what the header claims, and then one byte more, which must not
// exist (the file is not what its header says otherwise).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/byte_reader.h"

namespace ra::data {

// The most one data file (IDX, npy), or one CIFAR-10 set of files, may hold: 1 GiB. 1.3 million
// 28 x 28 images or 349,000 CIFAR-10 records, whose float copy in memory takes 4 GiB;
// Fashion-MNIST's training images are 47 MB, CIFAR-10's six batches 184 MB. More is refused
// before it is read (for raw files, by the file's size; for gzip files, once that much arrived).
inline constexpr std::int64_t kMaxDataFileBytes = std::int64_t{1} << 30;

// Appends up to `want` bytes of `in` to `out` and returns how many arrived (fewer only at the end
// of the data). InputError from ByteReader for a read error or a corrupt gzip stream.
std::size_t read_chunked(ByteReader& in, std::vector<std::uint8_t>& out, std::size_t want);

// Whether `in` holds another byte. Reading one byte past the data, and no more, tells whether
// anything follows and makes zlib check the gzip trailer (CRC-32 and length), which is what
// catches a stream corrupted in a way that still inflates.
bool has_more(ByteReader& in);

}  // namespace ra::data
