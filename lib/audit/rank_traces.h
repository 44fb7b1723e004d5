#pragma once
// The traces of a data-parallel run's ranks (docs/distributed.md). Rank 0's trace is the run's
// (run-NNN.trace.jsonl, what the manifest, --resume and shards see); rank r's is
// run-NNN/rank-R.trace.jsonl, written by the PyTorch recorder
// (lib/python/repro_audit/distributed.py). A run is whole only when every rank's trace is.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace ra::audit {

// run-NNN/rank-R.trace.jsonl beside run-NNN.trace.jsonl (rank 0: the run's trace itself).
std::filesystem::path rank_trace_path(const std::filesystem::path& run_trace, int rank);

// Why the run whose rank-0 trace `run_trace` is (read from `file`) is not whole for want of
// another rank's trace: missing, refused by the reader, a failed run's, of another audit, run or
// world size; "" when every rank's is whole, or the run was a single process.
std::string rank_traces_problem(const trace::Trace& run_trace, const std::filesystem::path& file);

// Rank traces of a run that failed, renamed failed-rank-R.trace.jsonl in its folder: never read as
// parts of a whole run, kept to read.
void quarantine_rank_traces(const std::filesystem::path& run_trace);

// Rank r of each run compared with rank r of the reference run, and the replicas of each run
// checked against each other, for traces (rank 0's, from their files) of a data-parallel audit;
// none when the reference run was a single process. Runs of another world size than the
// reference's are left out of the rank comparison (compare says why in a warning).
std::optional<compare::DistributedFindings> distributed_findings(
    const std::vector<trace::Trace>& run_traces, const compare::ComparisonOptions& options);

}  // namespace ra::audit
