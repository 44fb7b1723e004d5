#include "spec/parse_data.h"

#include <filesystem>

#include "spec/limits.h"

namespace ra::spec::detail {
namespace {

// Relative paths are taken from the spec's folder and stored absolute, so that the resolved spec
// means the same from any working directory and parse_spec(to_json(s), s.base_dir) is stable.
std::string resolve_data_path(const std::string& base_dir, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  if (p.is_absolute()) return path;
  p = fs::path(base_dir) / p;
  std::error_code ec;
  const fs::path absolute = fs::absolute(p, ec);
  return (ec ? p : absolute).lexically_normal().string();
}

// A required file path: a non-empty string, resolved against the spec's folder.
void read_data_path(ObjectReader& r, const char* key, const std::string& base_dir,
                    std::string& field, Problems& problems) {
  if (!r.require(key, "a file path") || !r.string(key, field)) return;
  if (field.empty()) {
    problems.push_back({r.path_of(key), "expected a file path, got \"\""});
  } else {
    field = resolve_data_path(base_dir, field);
  }
}

// cifar10's "files": 1..kMaxDataFiles file paths, read in order.
void read_data_paths(ObjectReader& r, const std::string& base_dir, DatasetSpec& set,
                     Problems& problems) {
  const Json* files = r.require("files", "an array of file paths");
  if (files == nullptr) return;
  const std::string at = r.path_of("files");
  if (!files->is_array() || files->empty() ||
      files->size() > static_cast<std::size_t>(kMaxDataFiles)) {
    problems.push_back({at, "expected an array of 1 to " + std::to_string(kMaxDataFiles) +
                                " file paths, got " + detail::describe(*files)});
    return;
  }
  for (std::size_t i = 0; i < files->size(); ++i) {
    const Json& f = (*files)[i];
    if (!f.is_string() || f.get<std::string>().empty()) {
      problems.push_back(
          {detail::index_path(at, i), "expected a file path, got " + detail::describe(f)});
    } else {
      set.files.push_back(resolve_data_path(base_dir, f.get<std::string>()));
    }
  }
}

// The keys of a set read from files (idx, npy, cifar10).
void parse_file_set(ObjectReader& r, const std::string& base_dir, DatasetSpec& set,
                    Problems& problems) {
  switch (set.format) {
    case DataFormat::npy:
      r.report_unknown_keys({"format", "images", "labels", "layout", "limit"}, "npy data sets");
      r.choice("layout", set.layout, {ImageLayout::nchw, ImageLayout::nhwc});
      break;
    case DataFormat::cifar10:
      r.report_unknown_keys({"format", "files", "limit"}, "cifar10 data sets");
      read_data_paths(r, base_dir, set, problems);
      // Known from the format: checked against the model with the synthetic sets'.
      set.shape = kCifar10SampleShape;
      set.classes = kCifar10Classes;
      return;
    default:
      r.report_unknown_keys({"format", "images", "labels", "limit"}, "idx data sets");
      break;
  }
  read_data_path(r, "images", base_dir, set.images, problems);
  read_data_path(r, "labels", base_dir, set.labels, problems);
}

// The keys of a synthetic set (random, constant).
void parse_synthetic_set(ObjectReader& r, DatasetSpec& set, Problems& problems) {
  const bool random = set.format == DataFormat::random;
  r.report_unknown_keys(
      {"format", "samples", "shape", "classes", random ? "seed" : "value", "limit"},
      random ? "random data sets" : "constant data sets");
  if (r.require("samples", "a positive integer")) {
    r.integer("samples", set.samples, IntRange{1, kMaxSamples});
  }
  if (const Json* shape = r.require("shape", "[C, H, W] of positive integers")) {
    const std::string at = r.path_of("shape");
    if (!shape->is_array() || shape->size() != 3) {
      problems.push_back(
          {at, "expected [C, H, W] of positive integers, got " + detail::describe(*shape)});
    } else {
      Shape dims;
      for (std::size_t i = 0; i < 3; ++i) {
        if (auto d = detail::read_integer((*shape)[i], detail::index_path(at, i),
                                          IntRange{1, kMaxDimension}, problems)) {
          dims.push_back(*d);
        }
      }
      if (dims.size() == 3) set.shape = dims;
    }
  }
  r.integer("classes", set.classes, IntRange{2, kMaxClasses});
  if (random) {
    r.uint64("seed", set.seed);
  } else {
    r.real("value", set.value, detail::RealRange{});
  }
}

// data.train / data.eval. Returns true when the set was read without a problem.
bool parse_dataset(const Json& value, const std::string& path, const std::string& base_dir,
                   DatasetSpec& set, Problems& problems) {
  const std::size_t before = problems.size();
  ObjectReader r(value, path, problems);
  if (!r.is_object()) return false;
  const Json* format =
      r.require("format", "one of \"idx\", \"cifar10\", \"npy\", \"random\", \"constant\"");
  if (format == nullptr || !r.choice("format", set.format,
                                     {DataFormat::idx, DataFormat::cifar10, DataFormat::npy,
                                      DataFormat::random, DataFormat::constant})) {
    return false;  // the other keys depend on the format
  }
  if (from_files(set.format)) {
    parse_file_set(r, base_dir, set, problems);
  } else {
    parse_synthetic_set(r, set, problems);
  }
  if (r.integer("limit", set.limit, IntRange{0, kMaxSamples}) && !from_files(set.format) &&
      set.samples > 0 && set.limit > set.samples) {
    problems.push_back({r.path_of("limit"), "expected at most the " + std::to_string(set.samples) +
                                                " samples of the set (0 = all), got " +
                                                std::to_string(set.limit)});
  }
  return problems.size() == before;
}

// data.augment: whole-pixel or fractional shifts (not both), flips, the fill of vacated cells.
void parse_augment(const Json& value, const ObjectReader& data, AugmentSpec& augment,
                   Problems& problems) {
  ObjectReader a(value, data.path_of("augment"), problems);
  if (!a.is_object()) return;
  a.report_unknown_keys({"shift", "flip", "width_shift_range", "height_shift_range", "fill_mode"},
                        "augment sections");
  a.integer("shift", augment.shift, IntRange{0, kMaxDimension});
  a.boolean("flip", augment.flip);
  a.real("width_shift_range", augment.width_shift_range, kUnitInterval);
  a.real("height_shift_range", augment.height_shift_range, kUnitInterval);
  a.choice("fill_mode", augment.fill_mode, {FillMode::constant, FillMode::nearest});
  if (augment.shift > 0 &&
      (augment.width_shift_range > 0.0f || augment.height_shift_range > 0.0f)) {
    problems.push_back({a.path(),
                        "shift (whole pixels) and width_shift_range or "
                        "height_shift_range (fractions of the size, as Keras' "
                        "ImageDataGenerator) exclude each other; keep one"});
  }
}

}  // namespace

ParsedData parse_data(const Json& value, const std::string& base_dir, DataSpec& data,
                      Problems& problems) {
  ParsedData parsed;
  ObjectReader r(value, "data", problems);
  if (!r.is_object()) return parsed;
  r.report_unknown_keys(
      {"train", "eval", "scale", "batch_size", "shuffle", "drop_last", "workers", "augment"},
      "data");
  if (const Json* train = r.require("train", "a data set object")) {
    parsed.train_ok = parse_dataset(*train, r.path_of("train"), base_dir, data.train, problems);
  }
  if (const Json* eval = r.find("eval")) {
    data.eval.emplace();
    parsed.eval_ok = parse_dataset(*eval, r.path_of("eval"), base_dir, *data.eval, problems);
  }
  r.real("scale", data.scale, kPositive);
  r.integer("batch_size", data.batch_size, IntRange{1, kMaxBatchSize});
  r.boolean("shuffle", data.shuffle);
  r.boolean("drop_last", data.drop_last);
  r.integer("workers", data.workers, IntRange{0, kMaxWorkers});
  if (const Json* augment = r.find("augment")) parse_augment(*augment, r, data.augment, problems);
  return parsed;
}

}  // namespace ra::spec::detail
