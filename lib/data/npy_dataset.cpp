#include "data/npy_dataset.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "data/dataset_parts.h"
#include "data/file_bytes.h"
#include "spec/limits.h"

namespace ra::data {
namespace {

static_assert(std::endian::native == std::endian::little, "npy data is read as little-endian");

// Label files without a label >= 10 carry 10 classes, as IDX sets do.
constexpr int kDefaultNpyClasses = 10;

std::string shape_text(const formats::NpyHeader& h) {
  return to_string(h.shape) + " of dtype '" + h.descr + "'";
}

// A sample's [C, H, W] from the images' header, after checking its dtype and rank.
Shape image_sample_shape(const NpyArrayFile& images, spec::ImageLayout layout) {
  const formats::NpyHeader& h = images.header();
  const bool bytes = h.descr == "|u1" || h.descr == "<u1" || h.descr == "=u1";
  if (!bytes && h.descr != "<f4") {
    detail::fail_in_file(images.path(),
                         "images of dtype '" + h.descr +
                             "' are not read; expected uint8 ('|u1') or little-endian float32 "
                             "('<f4'): save a.astype(np.uint8) or a.astype('<f4')");
  }
  const Shape& d = h.shape;
  if (d.size() == 3) return {1, d[1], d[2]};
  if (d.size() == 4) {
    return layout == spec::ImageLayout::nchw ? Shape{d[1], d[2], d[3]} : Shape{d[3], d[1], d[2]};
  }
  detail::fail_in_file(images.path(),
                       "images array of shape " + to_string(d) +
                           "; expected [N, H, W], [N, C, H, W] (layout \"nchw\") or [N, H, W, C] "
                           "(layout \"nhwc\")");
}

// Checks the labels' header against the images' sample count `n`.
void check_labels_header(const NpyArrayFile& labels, std::int64_t n, const std::string& images) {
  const formats::NpyHeader& h = labels.header();
  const bool integer = (h.descr[0] == '<' || h.descr[0] == '|' || h.descr[0] == '=') &&
                       (h.descr[1] == 'i' || h.descr[1] == 'u');
  if (!integer) {
    detail::fail_in_file(labels.path(),
                         "labels of dtype '" + h.descr +
                             "' are not read; expected little-endian integers ('|u1', '<i4', "
                             "'<i8', ...): save y.astype(np.int64)");
  }
  const Shape& d = h.shape;
  if (!(d.size() == 1 || (d.size() == 2 && d[1] == 1))) {
    detail::fail_in_file(labels.path(),
                         "labels array of shape " + to_string(d) + "; expected [N] or [N, 1]");
  }
  if (d[0] != n) {
    throw InputError(images + " holds " + std::to_string(n) + " images but " + labels.path() +
                     " holds " + std::to_string(d[0]) + " labels");
  }
}

// Every label, checked in 0..kMaxClasses-1, as int32; `classes` becomes max(10, max label + 1).
std::vector<std::int32_t> decode_labels(NpyArrayFile& file, int& classes) {
  const std::vector<std::uint8_t> bytes = file.read_data();
  const std::size_t width = formats::npy_item_bytes(file.header().descr);
  const bool is_signed = file.header().descr[1] == 'i';
  std::vector<std::int32_t> labels(bytes.size() / width);
  std::int64_t largest = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    std::uint64_t raw = 0;
    std::memcpy(&raw, bytes.data() + i * width, width);
    std::int64_t value = static_cast<std::int64_t>(raw);
    const int unused = static_cast<int>(64 - 8 * width);
    if (is_signed && unused > 0) value = static_cast<std::int64_t>(raw << unused) >> unused;
    const bool too_large = !is_signed && width == 8 && raw > std::uint64_t{1} << 62;
    if (value < 0 || too_large || value >= spec::kMaxClasses) {
      detail::fail_in_file(file.path(),
                           "label " + (is_signed ? std::to_string(value) : std::to_string(raw)) +
                               " of sample " + std::to_string(i) + " is outside 0.." +
                               std::to_string(spec::kMaxClasses - 1));
    }
    largest = std::max(largest, value);
    labels[i] = static_cast<std::int32_t>(value);
  }
  classes = std::max<int>(kDefaultNpyClasses, static_cast<int>(largest) + 1);
  return labels;
}

// The first `count` samples as scaled floats in [C, H, W] order; `value(k)` is element k of the
// file's array as a float.
template <class Value>
std::vector<float> gather(std::int64_t count, const Shape& sample, bool channels_last, float scale,
                          Value value) {
  const std::int64_t c_n = sample[0], hw = sample[1] * sample[2], per = c_n * hw;
  std::vector<float> out(static_cast<std::size_t>(count * per));
  for (std::int64_t s = 0; s < count; ++s) {
    for (std::int64_t c = 0; c < c_n; ++c) {
      for (std::int64_t p = 0; p < hw; ++p) {
        const std::int64_t from = s * per + (channels_last ? p * c_n + c : c * hw + p);
        out[static_cast<std::size_t>(s * per + c * hw + p)] = value(from) * scale;
      }
    }
  }
  return out;
}

std::vector<float> decode_images(NpyArrayFile& file, const Shape& sample, std::int64_t count,
                                 bool channels_last, float scale) {
  const std::vector<std::uint8_t> bytes = file.read_data();
  if (formats::npy_item_bytes(file.header().descr) == 1) {
    if (!channels_last) return detail::scaled_pixels(bytes, count * element_count(sample), scale);
    return gather(count, sample, true, scale,
                  [&](std::int64_t k) { return static_cast<float>(bytes[k]); });
  }
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (std::isfinite(values[k])) continue;
    const auto per = static_cast<std::size_t>(element_count(sample));
    detail::fail_in_file(file.path(), "value " + std::to_string(values[k]) + " of sample " +
                                          std::to_string(k / per) + " (element " +
                                          std::to_string(k) + ") is not finite");
  }
  return gather(count, sample, channels_last, scale,
                [&](std::int64_t k) { return values[static_cast<std::size_t>(k)]; });
}

}  // namespace

NpyArrayFile::NpyArrayFile(std::string file_path)
    : path_(std::move(file_path)), in_(std::make_unique<ByteReader>(path_)) {
  header_ = formats::read_npy_header(*in_);
  if (header_.fortran_order) {
    detail::fail_in_file(path_,
                         "a Fortran-ordered array (fortran_order True) is not read; save "
                         "np.ascontiguousarray(a)");
  }
  const std::size_t item = formats::npy_item_bytes(header_.descr);
  if (item == 0)
    detail::fail_in_file(path_, "dtype '" + header_.descr + "' is not a plain number type");
  if (header_.shape.empty())
    detail::fail_in_file(path_, "holds a single value (shape ()), not an array");
  std::int64_t bytes = static_cast<std::int64_t>(item);
  for (std::size_t i = 0; i < header_.shape.size(); ++i) {
    const std::int64_t d = header_.shape[i];
    if (d <= 0)
      detail::fail_in_file(path_, "shape " + shape_text(header_) + " holds no data (dimension " +
                                      std::to_string(i) + " is 0)");
    if (bytes > kMaxDataFileBytes / d) {
      detail::fail_in_file(
          path_, "shape " + shape_text(header_) +
                     " declares more than 1 GiB of data; this tool reads at most 1 GiB from one "
                     "data file");
    }
    bytes *= d;
  }
  data_bytes_ = bytes;
  if (in_->compressed()) return;
  const auto have =
      static_cast<std::int64_t>(in_->file_bytes()) - static_cast<std::int64_t>(header_.data_offset);
  if (have != data_bytes_) {
    detail::fail_in_file(path_, std::string(have < data_bytes_ ? "truncated" : "trailing bytes") +
                                    ": shape " + shape_text(header_) + " needs " +
                                    std::to_string(data_bytes_) +
                                    " bytes of data, the file holds " + std::to_string(have));
  }
}

NpyArrayFile::~NpyArrayFile() = default;

std::vector<std::uint8_t> NpyArrayFile::read_data() {
  std::vector<std::uint8_t> bytes;
  const std::size_t want = static_cast<std::size_t>(data_bytes_);
  const std::size_t have = read_chunked(*in_, bytes, want);
  if (have < want || has_more(*in_)) {
    detail::fail_in_file(path_, std::string(have < want ? "truncated" : "trailing bytes") +
                                    ": shape " + shape_text(header_) + " needs " +
                                    std::to_string(data_bytes_) + " bytes of data" +
                                    (have < want ? ", the file holds " + std::to_string(have)
                                                 : std::string(", and more follow")));
  }
  return bytes;
}

Dataset load_npy_dataset(const spec::DatasetSpec& spec, float scale, std::string_view role,
                         const Shape& expected_sample_shape) {
  for (const auto& [field, path] : {std::pair{"images", &spec.images}, {"labels", &spec.labels}}) {
    if (const std::string problem = detail::open_problem(*path); !problem.empty()) {
      throw InputError(detail::keyed(role, field, problem));
    }
  }
  // Both headers are read and checked against each other, the limit and the model before any data.
  NpyArrayFile images(spec.images);
  NpyArrayFile labels(spec.labels);
  Dataset set;
  set.role = std::string(role);
  set.source = spec.labels;
  set.sample_shape = image_sample_shape(images, spec.layout);
  const std::int64_t n = images.header().shape[0];
  check_labels_header(labels, n, spec.images);
  if (!expected_sample_shape.empty() && set.sample_shape != expected_sample_shape) {
    const Shape& d = images.header().shape;
    const bool channels_last_file = spec.layout == spec::ImageLayout::nchw && d.size() == 4 &&
                                    Shape{d[3], d[1], d[2]} == expected_sample_shape;
    throw InputError("data." + set.role + ": " + spec.images + " holds images of shape " +
                     to_string(set.sample_shape) + " but model.input is " +
                     to_string(expected_sample_shape) +
                     (channels_last_file ? "; its arrays are [N, H, W, C] (Keras' layout): add "
                                           "\"layout\": \"nhwc\" to the data set"
                                         : ""));
  }
  const std::int64_t count = detail::limited_count(n, spec.limit, role, spec.images);
  set.labels = decode_labels(labels, set.classes);
  set.labels.resize(static_cast<std::size_t>(count));
  const bool channels_last =
      spec.layout == spec::ImageLayout::nhwc && images.header().shape.size() == 4;
  set.images = decode_images(images, set.sample_shape, count, channels_last, scale);
  return set;
}

}  // namespace ra::data
