// The traces of a data-parallel run's ranks: audit/rank_traces.h.
#include "audit/rank_traces.h"

#include "compare/collective_check.h"
#include "compare/replica_check.h"
#include "core/error.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

namespace ra::audit {
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

namespace {

// Rank `rank` of each of `runs` compared with the reference's rank `rank`.
compare::RankComparison compare_rank(const std::vector<const trace::Trace*>& runs, int rank,
                                     const compare::ComparisonOptions& given) {
  std::vector<trace::Trace> traces;
  for (const trace::Trace* t : runs)
    traces.push_back(trace::read_trace_summary(rank_trace_path(t->source, rank)));
  compare::ComparisonOptions options;
  options.expect_identical = given.expect_identical;
  options.loss_tolerance = given.loss_tolerance;
  const compare::ComparisonResult result = compare::compare_traces(traces, options);
  return compare::RankComparison{rank, result.identical, result.first_divergence};
}

}  // namespace

namespace {

// The replicas of one run checked against each other, until the first run whose replicas part.
void check_replicas(const std::vector<trace::Trace>& ranks, int run,
                    compare::DistributedFindings& f) {
  if (f.replicas_parted) return;
  ++f.runs_checked;
  if (f.expected_differences.empty())
    f.expected_differences = compare::expected_rank_differences(ranks);
  f.replicas_parted = compare::replica_divergence(ranks, run);
}

// One run's buckets against the reference run's, until the first difference of each kind.
void check_collectives(const compare::RunBuckets& reference, const compare::RunBuckets& other,
                       compare::DistributedFindings& f) {
  if (!f.bucket_layout) f.bucket_layout = compare::bucket_layout_difference(reference, other);
  if (!f.collective) f.collective = compare::collective_divergence(reference, other);
}

}  // namespace

std::optional<compare::DistributedFindings> distributed_findings(
    const std::vector<trace::Trace>& run_traces, const compare::ComparisonOptions& options) {
  if (run_traces.empty() || !run_traces[0].header.distributed) return std::nullopt;
  const trace::RankPlacement& reference = *run_traces[0].header.distributed;
  compare::DistributedFindings f;
  f.world_size = reference.world_size;
  f.backend = reference.backend;
  f.nccl = reference.nccl;
  f.comm_hook = reference.comm_hook;
  std::vector<const trace::Trace*> runs;  // the runs of the reference's world size
  for (const trace::Trace& t : run_traces) {
    if (t.header.distributed && t.header.distributed->world_size == f.world_size)
      runs.push_back(&t);
  }
  for (int rank = 1; rank < f.world_size; ++rank)
    f.ranks.push_back(compare_rank(runs, rank, options));
  // Each run's ranks are read whole once: the replicas checked against each other, and the
  // buckets (small: a few digests a step) kept of the reference run only, to compare the others'
  // of its seed group with.
  compare::RunBuckets reference_buckets;
  for (const trace::Trace* t : runs) {
    const bool reference_run = t == runs.front();
    const bool same_group = t->header.seed_group == runs.front()->header.seed_group;
    if (f.replicas_parted && !reference_run && (!same_group || (f.collective && f.bucket_layout)))
      continue;  // nothing left to find in this run
    std::vector<trace::Trace> ranks;
    for (int rank = 0; rank < f.world_size; ++rank)
      ranks.push_back(trace::read_trace(rank_trace_path(t->source, rank)));
    // The run as the report numbers it: its position among the compared traces (two audits'
    // files given to compare may share a run index).
    const int run = static_cast<int>(t - run_traces.data());
    check_replicas(ranks, run, f);
    if (reference_run) {
      reference_buckets = compare::buckets_of(ranks, run);
    } else if (same_group) {
      check_collectives(reference_buckets, compare::buckets_of(ranks, run), f);
    }
  }
  return f;
}

}  // namespace ra::audit
