// The traces of a data-parallel run's ranks: rundir/rank_traces.h.
#include "rundir/rank_traces.h"

#include "core/error.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

namespace ra::rundir {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTraceSuffix = ".trace.jsonl";

fs::path run_folder_of(const fs::path& run_trace) {
  std::string name = run_trace.filename().string();
  if (name.ends_with(kTraceSuffix)) name.resize(name.size() - std::string(kTraceSuffix).size());
  return run_trace.parent_path() / name;
}

std::string rank_file_name(int rank) {
  return "rank-" + std::to_string(rank) + kTraceSuffix;
}

// Why `t`, read as rank `rank` of the run `reference` is rank 0 of, is not that rank's whole
// trace; "" when it is.
std::string rank_mismatch(const trace::Trace& t, const trace::Trace& reference, int rank) {
  const auto& placement = t.header.distributed;
  if (!placement || placement->rank != rank) return "is not rank " + std::to_string(rank) + "'s";
  if (placement->world_size != reference.header.distributed->world_size) {
    return "says world size " + std::to_string(placement->world_size) + ", rank 0's " +
           std::to_string(reference.header.distributed->world_size);
  }
  if (t.header.audit_id != reference.header.audit_id) return "is of another audit";
  if (t.header.run_index != reference.header.run_index) {
    return "is of run " + std::to_string(t.header.run_index);
  }
  if (t.failed()) return "says the rank " + trace::describe_failure(*t.final);
  return "";
}

}  // namespace

fs::path rank_trace_path(const fs::path& run_trace, int rank) {
  if (rank == 0) return run_trace;
  return run_folder_of(run_trace) / rank_file_name(rank);
}

std::string rank_traces_problem(const trace::Trace& run_trace, const fs::path& file) {
  if (!run_trace.header.distributed) return "";
  const int world = run_trace.header.distributed->world_size;
  for (int rank = 1; rank < world; ++rank) {
    const fs::path path = rank_trace_path(file, rank);
    const std::string name = path.parent_path().filename().string() + "/" + rank_file_name(rank);
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      return "has no trace " + name + " of rank " + std::to_string(rank) + " of " +
             std::to_string(world) + " (a run is whole only when every rank's trace is)";
    }
    try {
      const trace::Trace t = trace::read_trace_summary(path);
      if (const std::string why = rank_mismatch(t, run_trace, rank); !why.empty()) {
        return "has a trace " + name + " that " + why;
      }
    } catch (const InputError& e) {
      return "has a trace " + name + " this tool refuses (" + e.what() + ")";
    }
  }
  return "";
}

void quarantine_rank_traces(const fs::path& run_trace) {
  const fs::path folder = run_folder_of(run_trace);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("rank-") || !name.ends_with(kTraceSuffix)) continue;
    fs::rename(entry.path(), folder / ("failed-" + name), ec);
    if (ec) fs::remove(entry.path(), ec);  // never left under a whole rank trace's name
  }
}

}  // namespace ra::rundir
