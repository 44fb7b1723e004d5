#include "rundir/kept_outputs_file.h"

#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/text_excerpt.h"

namespace ra::rundir {
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

// The bytes of a file, consumed line by line and then byte by byte.
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : rest_(bytes) {}

  // One JSON object on one line.
  json line(const char* what) {
    const std::size_t end = rest_.find('\n');
    if (end == std::string_view::npos) throw Damaged(std::string("it ends before ") + what);
    json j = json::parse(rest_.substr(0, end), nullptr, false);
    rest_.remove_prefix(end + 1);
    if (!j.is_object()) throw Damaged(std::string(what) + " is not a JSON object");
    return j;
  }
  std::string_view take(std::uint64_t n) {
    if (n > rest_.size()) throw Damaged("it ends inside an output's bytes");
    const std::string_view out = rest_.substr(0, static_cast<std::size_t>(n));
    rest_.remove_prefix(static_cast<std::size_t>(n));
    return out;
  }
  bool done() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// Checked members: a member of another type is damage, never an exception of the JSON library.
std::optional<std::string> string_in(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::int64_t> integer_in(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() &&
      it->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  return it->get<std::int64_t>();
}

std::uint64_t count_in(const json& j, const char* key, std::uint64_t most) {
  const std::optional<std::int64_t> value = integer_in(j, key);
  if (!value || *value < 0 || static_cast<std::uint64_t>(*value) > most)
    throw Damaged(std::string("field '") + key + "' is not an integer in [0, " +
                  std::to_string(most) + "]");
  return static_cast<std::uint64_t>(*value);
}

// The outputs of one entry into `kept`.
void read_outputs(const json& entry, Cursor& in, std::uint64_t file_bytes, KeptOutputsEntry& kept) {
  const auto outputs = entry.find("outputs");
  if (outputs == entry.end() || !outputs->is_array()) throw Damaged("an entry has no outputs");
  for (const json& o : *outputs) {
    if (!o.is_object()) throw Damaged("an output is not a JSON object");
    const std::optional<DType> dtype = dtype_of(string_in(o, "dtype").value_or(""));
    if (!dtype) throw Damaged("an output's dtype is not f32, i32, i64 or u8");
    const std::uint64_t bytes = count_in(o, "bytes", file_bytes);
    if (bytes % dtype_bytes(*dtype) != 0) throw Damaged("an output's bytes are not whole elements");
    const std::string_view data = in.take(bytes);
    kept.bytes.emplace_back(reinterpret_cast<const std::uint8_t*>(data.data()),
                            reinterpret_cast<const std::uint8_t*>(data.data()) + data.size());
    kept.dtypes.push_back(*dtype);
  }
}

// Every entry after the header, or Damaged: a file is used whole or not at all.
std::vector<KeptOutputsEntry> read_entries(Cursor& in, const json& head, std::uint64_t file_bytes) {
  const std::uint64_t entries = count_in(head, "entries", file_bytes);
  std::vector<KeptOutputsEntry> out;
  for (std::uint64_t e = 0; e < entries; ++e) {
    const json entry = in.line("an entry");
    KeptOutputsEntry& kept = out.emplace_back();
    kept.step = static_cast<std::int64_t>(count_in(
        entry, "step", static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    kept.index = count_in(entry, "index", std::numeric_limits<std::uint32_t>::max());
    read_outputs(entry, in, file_bytes, kept);
  }
  if (!in.done()) throw Damaged("bytes follow its last entry");
  return out;
}

}  // namespace

std::string parse_kept_outputs(std::string_view bytes, const trace::TraceHeader& header,
                               std::vector<KeptOutputsEntry>& entries) {
  try {
    Cursor in(bytes);
    const json head = in.line("its header");
    if (string_in(head, "record") != "kept_outputs" || integer_in(head, "format_version") != 1)
      throw Damaged("its header is not that of kept outputs, format version 1");
    // Checked apart from the entries: a stale file of another audit or run is not damaged.
    const std::optional<std::string> audit = string_in(head, "audit_id");
    const std::optional<std::int64_t> run = integer_in(head, "run_index");
    if (!audit || !run) throw Damaged("its header has no audit_id string or run_index integer");
    if (*audit != header.audit_id || *run != header.run_index) {
      return "kept by another run (audit " + excerpt(audit->empty() ? "none" : *audit) + ", run " +
             std::to_string(*run) + ") than its trace's";
    }
    for (KeptOutputsEntry& e : read_entries(in, head, bytes.size())) {
      entries.push_back(std::move(e));
    }
  } catch (const Damaged& e) {
    return std::string("damaged (") + e.what() + "), not used";
  }
  return "";
}

std::string load_kept_outputs(const std::filesystem::path& file, const trace::TraceHeader& header,
                              std::vector<KeptOutputsEntry>& entries) {
  std::error_code ec;
  if (std::filesystem::symlink_status(file, ec).type() == std::filesystem::file_type::not_found) {
    return "";
  }
  std::string bytes;
  try {
    bytes = read_file(file, kMaxKeptOutputsBytes, "kept outputs", Links::refuse);
  } catch (const InputError& e) {
    return std::string(e.what()) + ": not read";
  }
  const std::string why = parse_kept_outputs(bytes, header, entries);
  return why.empty() ? why : file.string() + ": " + why;
}

}  // namespace ra::rundir
