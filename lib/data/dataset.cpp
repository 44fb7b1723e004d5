#include "data/dataset.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/error.h"
#include "core/input_file.h"
#include "data/cifar10.h"
#include "data/dataset_parts.h"
#include "data/idx.h"
#include "data/npy_dataset.h"
#include "data/synthetic.h"

namespace ra::data {
namespace detail {

std::int64_t limited_count(std::int64_t available, std::int64_t limit, std::string_view role,
                           const std::string& source) {
  const std::string path = "data." + std::string(role) + ".limit";
  if (limit < 0) throw InputError(path + ": must be >= 0 (0 = all), got " + std::to_string(limit));
  if (limit > available) {
    throw InputError(path + ": " + std::to_string(limit) + " exceeds the " +
                     std::to_string(available) + " samples of " + source);
  }
  return limit == 0 ? available : limit;
}

std::string keyed(std::string_view role, std::string_view field, const std::string& problem) {
  return "data." + std::string(role) + "." + std::string(field) + ": " + problem;
}

void fail_in_file(const std::string& path, const std::string& what) {
  throw InputError(path + ": " + what);
}

std::string open_problem(const std::string& path) {
  try {
    const InputFile file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<float> scaled_pixels(const std::vector<std::uint8_t>& bytes, std::int64_t values,
                                 float scale) {
  std::array<float, 256> pixel_value;
  for (int b = 0; b < 256; ++b) pixel_value[b] = static_cast<float>(b) * scale;
  std::vector<float> out(static_cast<std::size_t>(values));
  std::transform(bytes.begin(), bytes.begin() + values, out.begin(),
                 [&](std::uint8_t b) { return pixel_value[b]; });
  return out;
}

}  // namespace detail

namespace {

using detail::keyed;
using detail::limited_count;
using detail::open_problem;

// MNIST-family label files carry 10 classes; a file with larger labels declares more.
constexpr int kDefaultIdxClasses = 10;

Dataset load_idx_dataset(const spec::DatasetSpec& spec, float scale, std::string_view role,
                         const Shape& expected_sample_shape) {
  for (const auto& [field, path] : {std::pair{"images", &spec.images}, {"labels", &spec.labels}}) {
    if (const std::string problem = open_problem(*path); !problem.empty()) {
      throw InputError(keyed(role, field, problem));
    }
  }
  // Both headers are read and checked against each other, the limit and the model before any
  // data: a mismatched or oversized file is refused after a few bytes, not after inflating it.
  IdxReader images_file(spec.images);
  IdxReader labels_file(spec.labels);
  const std::vector<std::int64_t>& image_dims = images_file.dims();
  const std::vector<std::int64_t>& label_dims = labels_file.dims();

  Dataset set;
  set.role = std::string(role);
  set.source = spec.labels;
  if (image_dims.size() == 3) {
    set.sample_shape = {1, image_dims[1], image_dims[2]};
  } else if (image_dims.size() == 4) {
    set.sample_shape = {image_dims[1], image_dims[2], image_dims[3]};
  } else {
    throw InputError(spec.images + ": images file has dims " + to_string(image_dims) +
                     "; expected [N, H, W] or [N, C, H, W]");
  }
  if (label_dims.size() != 1) {
    throw InputError(spec.labels + ": labels file has dims " + to_string(label_dims) +
                     "; expected [N]");
  }
  const std::int64_t n = image_dims[0];
  if (label_dims[0] != n) {
    throw InputError(spec.images + " holds " + std::to_string(n) + " images but " + spec.labels +
                     " holds " + std::to_string(label_dims[0]) + " labels");
  }
  if (!expected_sample_shape.empty() && set.sample_shape != expected_sample_shape) {
    throw InputError("data." + set.role + ": " + spec.images + " holds images of shape " +
                     to_string(set.sample_shape) + " but model.input is " +
                     to_string(expected_sample_shape));
  }
  const std::int64_t count = limited_count(n, spec.limit, role, spec.images);
  const std::vector<std::uint8_t> image_bytes = images_file.read_data();
  const std::vector<std::uint8_t> label_bytes = labels_file.read_data();

  const std::uint8_t max_label = *std::max_element(label_bytes.begin(), label_bytes.end());
  set.classes = std::max(kDefaultIdxClasses, int{max_label} + 1);

  set.images = detail::scaled_pixels(image_bytes, count * set.sample_elements(), scale);
  set.labels.assign(label_bytes.begin(), label_bytes.begin() + count);
  return set;
}

// Shape, sample count and class count of a synthetic set, checked with their JSON paths.
void check_synthetic(const spec::DatasetSpec& spec, std::string_view role) {
  const std::string at = "data." + std::string(role) + ".";
  if (spec.samples <= 0) {
    throw InputError(at + "samples: must be positive, got " + std::to_string(spec.samples));
  }
  if (spec.shape.empty() ||
      std::any_of(spec.shape.begin(), spec.shape.end(), [](std::int64_t d) { return d <= 0; })) {
    throw InputError(at + "shape: expected positive dimensions like [C, H, W], got " +
                     to_string(spec.shape));
  }
  if (spec.classes <= 0) {
    throw InputError(at + "classes: must be positive, got " + std::to_string(spec.classes));
  }
}

}  // namespace

Dataset load_dataset(const spec::DatasetSpec& spec, float scale, std::string_view role,
                     const Shape& expected_sample_shape) {
  switch (spec.format) {
    case spec::DataFormat::idx:
      return load_idx_dataset(spec, scale, role, expected_sample_shape);
    case spec::DataFormat::cifar10:
      return load_cifar10_dataset(spec, scale, role);
    case spec::DataFormat::npy:
      return load_npy_dataset(spec, scale, role, expected_sample_shape);
    case spec::DataFormat::random:
    case spec::DataFormat::constant: {
      check_synthetic(spec, role);
      const std::string source =
          "the " + std::string(role) + " " + spec::to_string(spec.format) + " set";
      const std::int64_t count = limited_count(spec.samples, spec.limit, role, source);
      Dataset set = spec.format == spec::DataFormat::random
                        ? make_random_dataset(spec, count, scale, role)
                        : make_constant_dataset(spec, count, scale, role);
      set.source = source;
      return set;
    }
  }
  throw InputError("data." + std::string(role) + ".format: unknown data format");
}

void check_data_files(const spec::DataSpec& data) {
  std::vector<Problem> problems;
  const auto check = [&](const spec::DatasetSpec& set, std::string_view role) {
    std::vector<std::pair<std::string, const std::string*>> files;
    if (set.format == spec::DataFormat::idx || set.format == spec::DataFormat::npy) {
      files = {{"images", &set.images}, {"labels", &set.labels}};
    }
    for (std::size_t i = 0; i < set.files.size(); ++i) {
      files.emplace_back("files[" + std::to_string(i) + "]", &set.files[i]);
    }
    for (const auto& [field, path] : files) {
      if (const std::string problem = open_problem(*path); !problem.empty()) {
        problems.push_back({"data." + std::string(role) + "." + field, problem});
      }
    }
  };
  check(data.train, "train");
  if (data.eval) check(*data.eval, "eval");
  if (!problems.empty()) throw ValidationError(std::move(problems));
}

void check_labels(const Dataset& set, int classes) {
  for (std::size_t i = 0; i < set.labels.size(); ++i) {
    const std::int32_t label = set.labels[i];
    if (label >= 0 && label < classes) continue;
    throw InputError("data." + set.role + ": label " + std::to_string(label) + " of sample " +
                     std::to_string(i) + " in " + set.source + " is outside the model's " +
                     std::to_string(classes) + " classes (0.." + std::to_string(classes - 1) +
                     "); give the last layer " + std::to_string(label + 1) +
                     " units or more, or use a data set without that label");
  }
}

}  // namespace ra::data
