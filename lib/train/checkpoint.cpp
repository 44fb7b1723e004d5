// Checkpoint files: write and read whole (train/checkpoint.h, docs/resume.md).
#include "train/checkpoint.h"

#include <bit>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/digest.h"
#include "core/error.h"
#include "formats/json_text.h"
#include "formats/safetensors.h"

namespace ra::train {
namespace {

using nlohmann::json;

constexpr const char* kFormatName = "repro-audit checkpoint";
constexpr const char* kWeightsPrefix = "weights/";
constexpr const char* kOptimizerPrefix = "optimizer/";
// The manifest holds the epoch's permutation: about 7 bytes a sample, 60000 samples ~ 420 KB.
constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{256} << 20;

std::string file_digest(std::string_view bytes) {
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(bytes.size())}, bytes.data(),
                      bytes.size())
      .hex();
}

// The run's seeds; "augment" only where the run's plan gave augmentation its own seed.
json seeds_json(const RunSeeds& s) {
  json j{{"init", s.init}, {"data", s.data}, {"dropout", s.dropout}};
  if (s.augment) j["augment"] = *s.augment;
  return j;
}

json manifest_json(const Checkpoint& c, const std::string& tensor_file, std::string_view tensors) {
  const TrainPosition& p = c.position;
  json streams = json::array();
  for (const RngStreamState& s : c.rng_streams) {
    streams.push_back({{"name", s.name}, {"key", {s.key.k0, s.key.k1}}, {"counter", s.counter}});
  }
  return {{"format", kFormatName},
          {"version", kCheckpointFormatVersion},
          {"spec_name", c.spec_name},
          {"spec_digest", c.spec_digest},
          {"seeds", seeds_json(c.seeds)},
          {"position",
           {{"step", p.step},
            {"epoch", p.epoch},
            {"batch", p.batch},
            {"epoch_steps", p.epoch_steps},
            // Bits, not a decimal: the epoch's mean loss must come out exact.
            {"epoch_loss_sum_bits", std::bit_cast<std::uint64_t>(p.epoch_loss_sum)},
            {"last_loss_bits", std::bit_cast<std::uint32_t>(p.last_loss)}}},
          {"optimizer", {{"iterations", c.optimizer_iterations}}},
          {"rng_streams", streams},
          {"data_order", {{"epoch", p.epoch}, {"permutation", c.epoch_order}}},
          {"tensors",
           {{"file", tensor_file}, {"bytes", tensors.size()}, {"xxh3", file_digest(tensors)}}}};
}

// Checked access to the manifest's fields: InputError "<file>: <path> ..." on anything else.
class Fields {
 public:
  explicit Fields(std::string source) : source_(std::move(source)) {}
  const json& at(const json& object, const std::string& key, const std::string& path) const {
    if (!object.is_object() || !object.contains(key)) fail(path + key, "is missing");
    return object.at(key);
  }
  template <typename T>
  T number(const json& object, const std::string& key, const std::string& path = "") const {
    const json& v = at(object, key, path);
    const bool ok = std::is_unsigned_v<T> ? v.is_number_unsigned() : v.is_number_integer();
    if (!ok) fail(path + key, "must be an integer");
    return v.get<T>();
  }
  std::string text(const json& object, const std::string& key, const std::string& path = "") const {
    const json& v = at(object, key, path);
    if (!v.is_string()) fail(path + key, "must be a string");
    return v.get<std::string>();
  }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(source_ + ": checkpoint field '" + field + "' " + what);
  }

 private:
  std::string source_;
};

void read_position(const Fields& f, const json& m, Checkpoint& c) {
  const json& p = f.at(m, "position", "");
  TrainPosition& pos = c.position;
  pos.step = f.number<std::int64_t>(p, "step", "position.");
  pos.epoch = f.number<std::int64_t>(p, "epoch", "position.");
  pos.batch = f.number<std::int64_t>(p, "batch", "position.");
  pos.epoch_steps = f.number<std::int64_t>(p, "epoch_steps", "position.");
  pos.epoch_loss_sum =
      std::bit_cast<double>(f.number<std::uint64_t>(p, "epoch_loss_sum_bits", "position."));
  pos.last_loss = std::bit_cast<float>(f.number<std::uint32_t>(p, "last_loss_bits", "position."));
  if (pos.step < 1 || pos.epoch < 0 || pos.batch < 0 || pos.epoch_steps < 0) {
    f.fail("position", "is out of range");
  }
}

void read_streams(const Fields& f, const json& m, Checkpoint& c) {
  const json& streams = f.at(m, "rng_streams", "");
  if (!streams.is_array()) f.fail("rng_streams", "must be an array");
  for (const json& s : streams) {
    const json& key = f.at(s, "key", "rng_streams[].");
    if (!key.is_array() || key.size() != 2 || !key[0].is_number_unsigned() ||
        !key[1].is_number_unsigned() || key[0].get<std::uint64_t>() > 0xffffffffu ||
        key[1].get<std::uint64_t>() > 0xffffffffu) {
      f.fail("rng_streams[].key", "must be two 32-bit words");
    }
    c.rng_streams.push_back(
        {f.text(s, "name", "rng_streams[]."),
         rng::PhiloxKey{key[0].get<std::uint32_t>(), key[1].get<std::uint32_t>()},
         f.number<std::uint64_t>(s, "counter", "rng_streams[].")});
  }
}

void read_tensors(const Fields& f, const json& m, const std::filesystem::path& manifest,
                  Checkpoint& c) {
  const json& t = f.at(m, "tensors", "");
  const std::string name = f.text(t, "file", "tensors.");
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    f.fail("tensors.file", "must name a file beside the manifest");
  }
  const std::filesystem::path path = manifest.parent_path() / name;
  const std::string bytes = read_file(path, kMaxReadFileBytes, "a checkpoint's tensors");
  if (bytes.size() != f.number<std::uint64_t>(t, "bytes", "tensors.") ||
      file_digest(bytes) != f.text(t, "xxh3", "tensors.")) {
    throw InputError(path.string() + ": not the tensor file its manifest " +
                     manifest.filename().string() +
                     " was written with (its size or XXH3-128 digest differs)");
  }
  formats::SafetensorsFile file = formats::decode_safetensors(bytes, path.string());
  for (auto& [tensor_name, tensor] : file.tensors) {
    if (tensor_name.starts_with(kWeightsPrefix)) {
      c.weights.emplace_back(tensor_name.substr(std::string_view(kWeightsPrefix).size()),
                             std::move(tensor));
    } else if (tensor_name.starts_with(kOptimizerPrefix)) {
      c.optimizer_state.emplace_back(tensor_name.substr(std::string_view(kOptimizerPrefix).size()),
                                     std::move(tensor));
    } else {
      throw InputError(path.string() + ": tensor '" + tensor_name + "' is no checkpoint's");
    }
  }
}

}  // namespace

std::filesystem::path checkpoint_stem(const std::filesystem::path& folder, std::int64_t step) {
  return folder / ("checkpoint-step-" + std::to_string(step));
}

CheckpointFiles write_checkpoint(const std::filesystem::path& stem, const Checkpoint& c) {
  std::vector<formats::NamedTensor> named;
  std::vector<std::string> names;  // the NamedTensors' names live here
  names.reserve(c.weights.size() + c.optimizer_state.size());
  for (const auto& [name, tensor] : c.weights) {
    names.push_back(kWeightsPrefix + name);
    named.push_back({names.back(), &tensor});
  }
  for (const auto& [name, tensor] : c.optimizer_state) {
    names.push_back(kOptimizerPrefix + name);
    named.push_back({names.back(), &tensor});
  }
  CheckpointFiles files;
  files.tensors = stem.string() + ".safetensors";
  files.manifest = stem.string() + ".json";
  const std::string tensors = formats::encode_safetensors(named, {{"format", kFormatName}});
  write_file_atomic(files.tensors, tensors);  // first: a manifest vouches for a whole tensor file
  const std::string manifest =
      manifest_json(c, files.tensors.filename().string(), tensors).dump(1) + "\n";
  write_file_atomic(files.manifest, manifest);
  files.bytes = tensors.size() + manifest.size();
  return files;
}

Checkpoint read_checkpoint(const std::filesystem::path& given) {
  std::filesystem::path manifest = given;
  if (manifest.extension() != ".json") manifest += ".json";
  const std::string text = read_file(manifest, kMaxManifestBytes, "a checkpoint manifest");
  const json m = formats::parse_json_text(text, manifest.string());
  const Fields f(manifest.string());
  if (!m.is_object() || f.text(m, "format") != kFormatName) {
    throw InputError(manifest.string() + ": not a repro-audit checkpoint manifest");
  }
  if (const auto v = f.number<int>(m, "version"); v != kCheckpointFormatVersion) {
    throw InputError(manifest.string() + ": checkpoint format version " + std::to_string(v) +
                     "; this tool reads version " + std::to_string(kCheckpointFormatVersion));
  }
  Checkpoint c;
  c.spec_name = f.text(m, "spec_name");
  c.spec_digest = f.text(m, "spec_digest");
  const json& seeds = f.at(m, "seeds", "");
  c.seeds = RunSeeds{f.number<std::uint64_t>(seeds, "init", "seeds."),
                     f.number<std::uint64_t>(seeds, "data", "seeds."),
                     f.number<std::uint64_t>(seeds, "dropout", "seeds."), std::nullopt};
  if (seeds.contains("augment")) {
    c.seeds.augment = f.number<std::uint64_t>(seeds, "augment", "seeds.");
  }
  read_position(f, m, c);
  c.optimizer_iterations =
      f.number<std::int64_t>(f.at(m, "optimizer", ""), "iterations", "optimizer.");
  read_streams(f, m, c);
  const json& order = f.at(m, "data_order", "");
  if (f.number<std::int64_t>(order, "epoch", "data_order.") != c.position.epoch) {
    f.fail("data_order.epoch", "is not the position's epoch");
  }
  const json& permutation = f.at(order, "permutation", "data_order.");
  if (!permutation.is_array()) f.fail("data_order.permutation", "must be an array");
  for (const json& i : permutation) {
    if (!i.is_number_integer()) f.fail("data_order.permutation", "must hold integers");
    c.epoch_order.push_back(i.get<std::int64_t>());
  }
  read_tensors(f, m, manifest, c);
  return c;
}

RestoreSkips parse_restore_skips(const std::string& text) {
  RestoreSkips s;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    if (item == "weights") {
      s.weights = true;
    } else if (item == "optimizer") {
      s.optimizer_state = true;
    } else if (item == "schedule") {
      s.schedule = true;
    } else if (item == "rng") {
      s.rng_streams = true;
    } else if (item == "position") {
      s.data_position = true;
    } else {
      throw InputError("--test-skip-restore: unknown piece '" + item +
                       "' (expected weights, optimizer, schedule, rng, position)");
    }
    pos = end + 1;
  }
  return s;
}

}  // namespace ra::train
