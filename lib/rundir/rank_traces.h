#pragma once
// The traces of a data-parallel run's ranks (docs/distributed.md). Rank 0's trace is the run's
// (run-NNN.trace.jsonl, what the manifest, --resume and shards see); rank r's is
// run-NNN/rank-R.trace.jsonl, written by the PyTorch recorder
// (lib/python/repro_audit/distributed.py). A run is whole only when every rank's trace is. The
// ranks compared across runs are the comparison's (audit/audit_compare.h).
#include <filesystem>
#include <string>

#include "trace/trace.h"

namespace ra::rundir {

// run-NNN/rank-R.trace.jsonl beside run-NNN.trace.jsonl (rank 0: the run's trace itself).
std::filesystem::path rank_trace_path(const std::filesystem::path& run_trace, int rank);

// Why the run whose rank-0 trace `run_trace` is (read from `file`) is not whole for want of
// another rank's trace: missing, refused by the reader, a failed run's, of another audit, run or
// world size; "" when every rank's is whole, or the run was a single process.
std::string rank_traces_problem(const trace::Trace& run_trace, const std::filesystem::path& file);

// Rank traces of a run that failed, renamed failed-rank-R.trace.jsonl in its folder: never read as
// parts of a whole run, kept to read.
void quarantine_rank_traces(const std::filesystem::path& run_trace);

}  // namespace ra::rundir
