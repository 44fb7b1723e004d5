#pragma once
// CIFAR-10's binary batches (https://www.cs.toronto.edu/~kriz/cifar.html, "CIFAR-10 binary
// version"): data_batch_1.bin .. data_batch_5.bin and test_batch.bin, each 10,000 records of 3073
// bytes: one label byte (0..9), then the 3072 pixel bytes of a 32 x 32 colour image,
// channel-major (1024 red, 1024 green, 1024 blue), each channel's rows top to bottom. No header:
// a file is its records, so its size must be a positive multiple of 3073. The samples are
// [3, 32, 32] as they lie in the file, PyTorch's layout.
//
// Tested on files written by the tests per this description only: the real batches cannot be
// downloaded where the tests run (docs/spec.md, "Data").
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/byte_reader.h"
#include "data/dataset.h"

namespace ra::data {

inline constexpr std::int64_t kCifar10PixelBytes = 3 * 32 * 32;
inline constexpr std::int64_t kCifar10RecordBytes = 1 + kCifar10PixelBytes;

// One batch file, opened, whose records have not been read yet.
class Cifar10File {
 public:
  // Opens `path`. InputError naming the file when it is missing, unreadable or not a regular file,
  // and, for a raw file (by its size, before any reading): empty, or not a multiple of 3073
  // bytes (a CIFAR-100 file, with 2 label bytes, is named as such), or over kMaxDataFileBytes.
  explicit Cifar10File(std::string path);
  ~Cifar10File();
  Cifar10File(const Cifar10File&) = delete;
  Cifar10File& operator=(const Cifar10File&) = delete;

  const std::string& path() const noexcept { return path_; }
  // The record count, known before reading for a raw file (gzip: nullopt).
  std::optional<std::int64_t> records() const noexcept { return records_; }

  // Appends the file's labels to `labels` and its pixel bytes to `pixels`, reading at most
  // `max_bytes`. InputError naming the file for: more than `max_bytes`, a size that is not a
  // positive multiple of 3073 (gzip files, known once inflated), a label byte above 9 (naming the
  // record), a corrupt gzip stream.
  void read(std::vector<std::uint8_t>& labels, std::vector<std::uint8_t>& pixels,
            std::int64_t max_bytes);

 private:
  std::string path_;
  std::unique_ptr<ByteReader> in_;
  std::optional<std::int64_t> records_;
};

// The set of `spec.files` (format cifar10), in order: their records concatenated, the first
// `spec.limit` kept (0 = all), pixels times `scale`, 10 classes. Every file is opened, and raw
// files' sizes checked, before any is read; at most kMaxDataFileBytes are read in all. Errors name
// the file, and a file that cannot be opened its spec key ("data.train.files[2]: ...").
Dataset load_cifar10_dataset(const spec::DatasetSpec& spec, float scale, std::string_view role);

}  // namespace ra::data
