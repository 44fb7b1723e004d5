#include "rundir/kept_op_replay.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/input_file.h"
#include "formats/json_text.h"
#include "rundir/folder_traces.h"

namespace ra::rundir {
namespace {

// A replay.json is a few hundred bytes per distinct output: 1 MiB holds a thousand.
constexpr std::uint64_t kMaxReplayBytes = 1 << 20;

std::string read_small_file(const std::filesystem::path& file) {
  return read_file(file, kMaxReplayBytes, "a replay");  // a regular file, never a FIFO
}

bool integer_within(const nlohmann::json& j, const char* key, std::int64_t low, std::int64_t high,
                    std::int64_t& out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return false;
  out = it->get<std::int64_t>();
  return out >= low && out <= high;
}

}  // namespace

std::optional<compare::KeptOpReplay> read_kept_replay(const std::filesystem::path& file,
                                                      const compare::RootCause& cause,
                                                      std::string& why_not) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(file, ec))) return std::nullopt;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(file, ec))) {
    why_not = file.string() + ": a symbolic link (repro-audit never follows such a name)";
    return std::nullopt;
  }
  try {
    const nlohmann::json j = formats::parse_json_text(read_small_file(file), file.string());
    std::int64_t step = 0, index = 0, times = 0, distinct = 0;
    if (!j.is_object() || !integer_within(j, "step", 0, INT64_MAX, step) ||
        !integer_within(j, "index", 0, INT64_MAX, index) ||
        !integer_within(j, "times", 1, 1000, times) ||
        !integer_within(j, "distinct_outputs", 1, times, distinct) || !j.contains("matches_run") ||
        !j["matches_run"].is_boolean() || !j.contains("op") || !j["op"].is_string()) {
      why_not = file.string() +
                ": not a replay (step, index, times, distinct_outputs, "
                "matches_run, op)";
      return std::nullopt;
    }
    if (step != cause.step || static_cast<std::size_t>(index) != cause.index ||
        j["op"].get<std::string>() != cause.record.op) {
      why_not = file.string() + ": the replay of another op (step " + std::to_string(step) +
                ", op " + std::to_string(index) + ")";
      return std::nullopt;
    }
    compare::KeptOpReplay r;
    r.times = static_cast<int>(times);
    r.distinct_outputs = static_cast<int>(distinct);
    r.matches_run = j["matches_run"].get<bool>();
    return r;
  } catch (const InputError& e) {
    why_not = e.what();
    return std::nullopt;
  }
}

void load_kept_replays(compare::ComparisonResult& result, const std::vector<trace::Trace>& traces,
                       std::vector<std::string>& ignored) {
  if (result.identity.compared_runs.empty()) return;
  const int reference = result.identity.compared_runs.front();
  for (compare::RootCause& cause : result.root_cause.causes) {
    if (cause.kind != compare::RootCause::Kind::op || cause.step < 0) continue;
    std::vector<int> runs{reference};
    runs.insert(runs.end(), cause.runs.begin(), cause.runs.end());
    for (const int run : runs) {
      const trace::Trace& t = traces[static_cast<std::size_t>(run)];
      if (t.source.empty() || !t.header.backend.starts_with("pytorch")) continue;
      std::string why_not;
      auto replay =
          read_kept_replay(snapshot_dir_of(t.source) / kKeptOpReplayFileName, cause, why_not);
      if (!why_not.empty()) ignored.push_back(why_not);
      if (!replay) continue;
      replay->run = run;
      // Assigned, not emplace()d: clang finds Magnitude not default-constructible through
      // std::optional, whose traits it fixed while RootCause was incomplete.
      if (!cause.magnitude) cause.magnitude = compare::RootCause::Magnitude{};
      cause.magnitude->kept_replays.push_back(*replay);
    }
  }
}

}  // namespace ra::rundir
