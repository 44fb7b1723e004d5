#include "audit/kept_outputs_file.h"

#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

namespace ra::audit {
namespace {

using json = nlohmann::json;

struct Damaged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::optional<DType> dtype_of(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "i32") return DType::i32;
  if (name == "i64") return DType::i64;
  if (name == "u8") return DType::u8;
  return std::nullopt;
}

// One JSON object on one line.
json line_of(std::ifstream& in, const char* what) {
  std::string line;
  if (!std::getline(in, line)) throw Damaged(std::string("it ends before ") + what);
  json j = json::parse(line, nullptr, false);
  if (!j.is_object()) throw Damaged(std::string(what) + " is not a JSON object");
  return j;
}

std::uint64_t count_in(const json& j, const char* key, std::uint64_t most) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() > most)
    throw Damaged(std::string("field '") + key + "' is not an integer in [0, " +
                  std::to_string(most) + "]");
  return it->get<std::uint64_t>();
}

struct Entry {
  std::int64_t step = 0;
  std::size_t index = 0;
  KeptOutputs::Outputs outputs;
};

// Every entry, or Damaged: a file is used whole or not at all.
std::vector<Entry> read_entries(std::ifstream& in, std::uintmax_t file_bytes) {
  std::vector<Entry> out;
  const json head = line_of(in, "its header");
  if (head.value("record", "") != "kept_outputs" || head.value("format_version", 0) != 1)
    throw Damaged("its header is not that of kept outputs, format version 1");
  const std::uint64_t entries = count_in(head, "entries", file_bytes);
  for (std::uint64_t e = 0; e < entries; ++e) {
    const json entry = line_of(in, "an entry");
    const auto step = static_cast<std::int64_t>(count_in(
        entry, "step", static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    const std::size_t index = count_in(entry, "index", std::numeric_limits<std::uint32_t>::max());
    const auto outputs = entry.find("outputs");
    if (outputs == entry.end() || !outputs->is_array()) throw Damaged("an entry has no outputs");
    KeptOutputs::Outputs kept;
    for (const json& o : *outputs) {
      const std::optional<DType> dtype = dtype_of(o.value("dtype", ""));
      if (!dtype) throw Damaged("an output's dtype is not f32, i32, i64 or u8");
      const std::uint64_t bytes = count_in(o, "bytes", file_bytes);
      if (bytes % dtype_bytes(*dtype) != 0)
        throw Damaged("an output's bytes are not whole elements");
      KeptOutputs::Bytes data(bytes);
      if (!in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes)))
        throw Damaged("it ends inside an output's bytes");
      kept.bytes.push_back(std::move(data));
      kept.dtypes.push_back(*dtype);
    }
    out.push_back({step, index, std::move(kept)});
  }
  if (in.peek() != std::ifstream::traits_type::eof()) throw Damaged("bytes follow its last entry");
  return out;
}

}  // namespace

std::string load_kept_outputs(const std::filesystem::path& file, const TraceHeader& header,
                              KeptOutputs& store) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return "";
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  std::ifstream in(file, std::ios::binary);
  if (ec || !in) return file.string() + ": cannot be read";
  try {
    // Checked apart from the entries: a stale file of another audit or run is not damaged.
    const json head = json::parse(
        [&] {
          std::string line;
          std::getline(in, line);
          return line;
        }(),
        nullptr, false);
    if (head.is_object() && (head.value("audit_id", std::string()) != header.audit_id ||
                             head.value("run_index", -1) != header.run_index)) {
      return file.string() + ": kept by another run (audit " +
             head.value("audit_id", std::string("none")) + ", run " +
             std::to_string(head.value("run_index", -1)) + ") than its trace's";
    }
    in.clear();
    in.seekg(0);
    for (Entry& e : read_entries(in, size)) {
      store.keep(header.run_index, e.step, e.index, std::move(e.outputs));
    }
  } catch (const Damaged& e) {
    return file.string() + ": damaged (" + e.what() + "), not used";
  }
  return "";
}

}  // namespace ra::audit
