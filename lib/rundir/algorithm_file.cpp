#include "rundir/algorithm_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/input_file.h"
#include "formats/json_text.h"

namespace ra::rundir {
namespace {

// An algorithm file is small: a few entries per convolution layer. (Of a trace, only the first
// line is read, within the same limit.)
constexpr std::size_t kMaxAlgorithmFileBytes = std::size_t{16} << 20;

bool is_convolution_direction(const std::string& direction) {
  return direction == "forward" || direction == "backward_data" || direction == "backward_filter";
}

// Every entry an object with the fields a pin needs, as strings: else InputError naming it.
void check_entries(const nlohmann::json& algorithms, const std::string& source) {
  if (!algorithms.is_array()) throw InputError(source + ": 'algorithms' must be an array");
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    const nlohmann::json& e = algorithms[i];
    for (const char* key : {"layer", "direction", "algorithm"}) {
      if (!e.is_object() || !e.contains(key) || !e[key].is_string()) {
        throw InputError(source + ": algorithms[" + std::to_string(i) + "]." + key +
                         " must be a string");
      }
    }
  }
}

nlohmann::json pinned_gpu_facts(const nlohmann::json& gpu) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : kPinnedGpuKeys) {
    out[key] = gpu.is_object() && gpu.contains(key) ? gpu[key] : nlohmann::json();
  }
  return out;
}

bool names_a_convolution(const nlohmann::json& entries) {
  for (const nlohmann::json& e : entries) {
    if (is_convolution_entry(e)) return true;
  }
  return false;
}

// The file's first `max_bytes` bytes (all of it when smaller) and whether there is more: a trace
// may be a GiB, and only its first line, the header, is needed.
std::pair<std::string, bool> read_head(const std::filesystem::path& path, std::size_t max_bytes) {
  const InputFile file(path);
  std::string head;
  char buffer[1 << 16];
  while (head.size() <= max_bytes) {
    const ssize_t n = ::read(file.fd(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(path.string() + ": cannot read (" + std::strerror(errno) + ")");
    }
    if (n == 0) return {head, false};
    head.append(buffer, static_cast<std::size_t>(n));
  }
  return {head.substr(0, max_bytes), true};
}

// A trace's header record, when `text` starts with one (a trace is JSON Lines whose first line is
// its header; an algorithm file is one JSON document, written indented: its first line alone is
// no JSON value).
std::optional<nlohmann::json> trace_header_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  if (end == std::string::npos) return std::nullopt;
  try {
    nlohmann::json line = formats::parse_json_text(std::string_view(text).substr(0, end), "");
    if (line.is_object() && line.value("record", "") == "header") return line;
  } catch (const InputError&) {
  }
  return std::nullopt;
}

// The fields of a trace header an algorithm file needs, checked as the trace reader would.
trace::TraceHeader header_of(const nlohmann::json& h, const std::string& source) {
  const auto fail = [&](const std::string& field, const char* what) {
    throw InputError(source + ": line 1 (the trace header): field '" + field + "' must be " + what);
  };
  trace::TraceHeader out;
  if (!h.contains("backend") || !h["backend"].is_string()) fail("backend", "a string");
  out.backend = h["backend"].get<std::string>();
  if (!h.contains("environment") || !h["environment"].is_object()) fail("environment", "an object");
  out.environment = h["environment"];
  if (!h.contains("run_index") || !h["run_index"].is_number_integer())
    fail("run_index", "an integer");
  out.run_index = h["run_index"].get<int>();
  out.ledger = h.value("ledger", nlohmann::json::array());
  check_entries(out.ledger, source + ": line 1 (the trace header): ledger");
  out.spec = h.value("spec", nlohmann::json::object());
  out.spec_digest = h.value("spec_digest", "");
  out.audit_id = h.value("audit_id", "");
  return out;
}

}  // namespace

bool is_convolution_entry(const nlohmann::json& entry) {
  return entry.is_object() && entry.value("layer", "").rfind("conv ", 0) == 0 &&
         is_convolution_direction(entry.value("direction", ""));
}

AlgorithmFile algorithm_file_of(const trace::TraceHeader& run) {
  const nlohmann::json& gpu = run.environment.contains("gpu") ? run.environment["gpu"] : nullptr;
  if (run.backend != "cuda" || !gpu.is_object()) {
    throw InputError("run " + std::to_string(run.run_index) + " trained on the " + run.backend +
                     ", which has one algorithm per op and instruction set: there is no "
                     "algorithm to save or pin (run on a GPU: --device cuda)");
  }
  AlgorithmFile file;
  file.gpu = pinned_gpu_facts(gpu);
  file.algorithms = run.ledger;
  file.made_from = {{"spec", run.spec.value("name", "")},
                    {"spec_digest", run.spec_digest},
                    {"audit_id", run.audit_id},
                    {"run", run.run_index}};
  if (!names_a_convolution(file.algorithms)) {
    throw InputError("run " + std::to_string(run.run_index) +
                     "'s ledger names no convolution algorithm: nothing to pin");
  }
  return file;
}

nlohmann::json to_json(const AlgorithmFile& file) {
  return {{"format", kAlgorithmFileFormat},
          {"version", kAlgorithmFileVersion},
          {"made_from", file.made_from},
          {"gpu", file.gpu},
          {"algorithms", file.algorithms}};
}

void write_algorithm_file(const std::filesystem::path& path, const AlgorithmFile& file) {
  write_file_atomic(path, to_json(file).dump(2) + "\n");
}

AlgorithmFile read_algorithm_file(const std::filesystem::path& path) {
  const std::string source = path.string();
  const auto [text, more] = read_head(path, kMaxAlgorithmFileBytes);
  if (const std::optional<nlohmann::json> header = trace_header_line(text)) {
    return algorithm_file_of(header_of(*header, source));
  }
  if (more) {
    throw InputError(source + ": larger than " + byte_size_text(kMaxAlgorithmFileBytes) +
                     ", the limit for an algorithm file (and no trace)");
  }
  const nlohmann::json doc = formats::parse_json_text(text, source);
  if (!doc.is_object() || doc.value("format", "") != kAlgorithmFileFormat) {
    throw InputError(source + ": not an algorithm file (its \"format\" is not \"" +
                     kAlgorithmFileFormat + "\") nor a trace");
  }
  if (!doc.contains("version") || doc["version"] != kAlgorithmFileVersion) {
    throw InputError(source + ": algorithm file version " +
                     formats::json_excerpt(doc.value("version", nlohmann::json())) +
                     ", this tool reads version " + std::to_string(kAlgorithmFileVersion));
  }
  if (!doc.contains("gpu") || !doc["gpu"].is_object()) {
    throw InputError(source + ": 'gpu' must be an object (the GPU the algorithms were chosen on)");
  }
  check_entries(doc.value("algorithms", nlohmann::json()), source);
  AlgorithmFile file;
  file.gpu = pinned_gpu_facts(doc["gpu"]);
  file.algorithms = doc["algorithms"];
  file.made_from = doc.value("made_from", nlohmann::json::object());
  if (!names_a_convolution(file.algorithms)) {
    throw InputError(source + ": names no convolution algorithm: nothing to pin");
  }
  return file;
}

std::vector<std::string> gpu_mismatches(const AlgorithmFile& file, const nlohmann::json& here) {
  std::vector<std::string> out;
  const nlohmann::json mine = pinned_gpu_facts(here);
  for (const char* key : kPinnedGpuKeys) {
    if (file.gpu[key] != mine[key]) {
      out.push_back(std::string(key) + ": " + formats::json_excerpt(file.gpu[key]) +
                    " in the file, " + formats::json_excerpt(mine[key]) + " here");
    }
  }
  return out;
}

}  // namespace ra::rundir
