#include "data/cifar10.h"

#include <utility>

#include "core/error.h"
#include "data/dataset_parts.h"
#include "data/file_bytes.h"

namespace ra::data {
namespace {

// CIFAR-100's binary records carry a coarse and a fine label byte before the same pixels.
constexpr std::int64_t kCifar100RecordBytes = 2 + kCifar10PixelBytes;

// Why `bytes` cannot be a CIFAR-10 batch, or "".
std::string size_problem(std::int64_t bytes) {
  if (bytes == 0) return "empty; a CIFAR-10 batch holds records of 3073 bytes";
  if (bytes % kCifar10RecordBytes == 0) return "";
  std::string what = std::to_string(bytes) +
                     " bytes is not a multiple of the 3073-byte CIFAR-10 record (1 label byte, "
                     "3072 pixel bytes)";
  if (bytes % kCifar100RecordBytes == 0) {
    what +=
        "; it is a multiple of 3074, CIFAR-100's record (2 label bytes), a format this "
        "reader does not read";
  }
  return what;
}

}  // namespace

Cifar10File::Cifar10File(std::string file_path)
    : path_(std::move(file_path)), in_(std::make_unique<ByteReader>(path_)) {
  if (in_->compressed()) return;
  const auto bytes = static_cast<std::int64_t>(in_->file_bytes());
  if (const std::string problem = size_problem(bytes); !problem.empty())
    detail::fail_in_file(path_, problem);
  if (bytes > kMaxDataFileBytes) {
    detail::fail_in_file(path_,
                         std::to_string(bytes) + " bytes; a CIFAR-10 set may hold at most 1 GiB");
  }
  records_ = bytes / kCifar10RecordBytes;
}

Cifar10File::~Cifar10File() = default;

void Cifar10File::read(std::vector<std::uint8_t>& labels, std::vector<std::uint8_t>& pixels,
                       std::int64_t max_bytes) {
  std::vector<std::uint8_t> bytes;
  const std::size_t want = records_ ? static_cast<std::size_t>(*records_ * kCifar10RecordBytes)
                                    : static_cast<std::size_t>(max_bytes);
  const std::size_t have = read_chunked(*in_, bytes, want);
  if (have < want && records_) {
    detail::fail_in_file(path_, "truncated while read: " + std::to_string(have) + " of its " +
                                    std::to_string(want) + " bytes");
  }
  if (has_more(*in_)) {
    detail::fail_in_file(path_, records_
                                    ? "grew while read"
                                    : "more than the 1 GiB a CIFAR-10 set may hold (inflated)");
  }
  if (const std::string problem = size_problem(static_cast<std::int64_t>(have)); !problem.empty()) {
    detail::fail_in_file(path_, problem);
  }
  const std::size_t records = have / kCifar10RecordBytes;
  labels.reserve(labels.size() + records);
  pixels.reserve(pixels.size() + records * kCifar10PixelBytes);
  for (std::size_t r = 0; r < records; ++r) {
    const std::uint8_t* record = bytes.data() + r * kCifar10RecordBytes;
    if (record[0] >= spec::kCifar10Classes) {
      detail::fail_in_file(path_, "label " + std::to_string(record[0]) + " of record " +
                                      std::to_string(r) + " (byte offset " +
                                      std::to_string(r * kCifar10RecordBytes) +
                                      ") is not a CIFAR-10 class (0..9)");
    }
    labels.push_back(record[0]);
    pixels.insert(pixels.end(), record + 1, record + kCifar10RecordBytes);
  }
}

Dataset load_cifar10_dataset(const spec::DatasetSpec& spec, float scale, std::string_view role) {
  // Every file opened and sized first: a missing or misnamed last file fails before any reading.
  std::vector<std::unique_ptr<Cifar10File>> files;
  std::int64_t known_bytes = 0;
  for (std::size_t i = 0; i < spec.files.size(); ++i) {
    const std::string field = "files[" + std::to_string(i) + "]";
    if (const std::string problem = detail::open_problem(spec.files[i]); !problem.empty()) {
      throw InputError(detail::keyed(role, field, problem));
    }
    files.push_back(std::make_unique<Cifar10File>(spec.files[i]));
    known_bytes += files.back()->records().value_or(0) * kCifar10RecordBytes;
    if (known_bytes > kMaxDataFileBytes) {
      throw InputError(detail::keyed(role, "files",
                                     "the files up to " + spec.files[i] +
                                         " hold more than the 1 GiB a CIFAR-10 "
                                         "set may hold"));
    }
  }
  std::vector<std::uint8_t> labels, pixels;
  for (const auto& file : files) {
    const auto read_so_far = static_cast<std::int64_t>(labels.size()) * kCifar10RecordBytes;
    file->read(labels, pixels, kMaxDataFileBytes - read_so_far);
  }
  Dataset set;
  set.role = std::string(role);
  set.source = spec.files.size() == 1
                   ? spec.files[0]
                   : spec.files[0] + " and " + std::to_string(spec.files.size() - 1) + " more";
  set.sample_shape = spec::kCifar10SampleShape;
  set.classes = spec::kCifar10Classes;
  const std::int64_t count =
      detail::limited_count(static_cast<std::int64_t>(labels.size()), spec.limit, role, set.source);
  set.images = detail::scaled_pixels(pixels, count * kCifar10PixelBytes, scale);
  set.labels.assign(labels.begin(), labels.begin() + count);
  return set;
}

}  // namespace ra::data
