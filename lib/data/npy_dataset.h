#pragma once
// Data sets in NumPy's .npy files (formats/npy.h): an images array and a labels array, as
// `np.save` writes them, raw or gzip-compressed.
//   images: uint8 ('|u1') or float32 ('<f4'), C order, [N, H, W] (one channel), [N, C, H, W]
//           (layout "nchw", PyTorch's) or [N, H, W, C] (layout "nhwc": Keras' load_data arrays,
//           moved to [C, H, W] per sample on load). float32 values must be finite.
//   labels: integers of any width, little-endian, [N] or [N, 1] (Keras' CIFAR-10 labels), each
//           in 0..2^24-1.
// The headers are read and checked first (dtype, order, shape, the two N against each other, the
// limit and the model's input, the size of the file against the shape), so a mismatched file is
// refused after reading its header; at most kMaxDataFileBytes of data per file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/byte_reader.h"
#include "data/dataset.h"
#include "formats/npy.h"

namespace ra::data {

// One .npy file whose header has been read and checked, and whose data has not.
class NpyArrayFile {
 public:
  // Opens `path` and reads its header (formats::read_npy_header's errors). InputError naming the
  // file for: fortran_order True, a dtype that is not a plain number, a zero or negative
  // dimension, data of more than kMaxDataFileBytes, and (raw files) a size other than the header
  // and the data the shape needs ("truncated" / "trailing bytes").
  explicit NpyArrayFile(std::string path);
  ~NpyArrayFile();
  NpyArrayFile(const NpyArrayFile&) = delete;
  NpyArrayFile& operator=(const NpyArrayFile&) = delete;

  const std::string& path() const noexcept { return path_; }
  const formats::NpyHeader& header() const noexcept { return header_; }
  std::int64_t data_bytes() const noexcept { return data_bytes_; }

  // The data the header declares. InputError naming the file for fewer bytes or trailing bytes.
  std::vector<std::uint8_t> read_data();

 private:
  std::string path_;
  std::unique_ptr<ByteReader> in_;
  formats::NpyHeader header_;
  std::int64_t data_bytes_ = 0;
};

// The set of `spec.images` and `spec.labels` (format npy): the first `spec.limit` samples (0 =
// all), pixels times `scale`, classes 10 unless a label >= 10 occurs in the labels file (then max
// label + 1). When `expected_sample_shape` is not empty (the model's input) the images' sample
// shape must equal it (checked from the header). Errors name the file and the problem.
Dataset load_npy_dataset(const spec::DatasetSpec& spec, float scale, std::string_view role,
                         const Shape& expected_sample_shape);

}  // namespace ra::data
