#pragma once
// Shards: one audit's runs spread over the tasks of a cluster job (a Slurm job array, a Kubernetes
// Indexed Job), each task training its share into one shared audit folder (docs/scale-out.md).
// Run p of the plan belongs to shard p mod N: shares differ by at most one run, and with
// --seeds both every shard gets runs of both seed groups once there are at least N runs per group.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "trace/trace.h"

namespace ra::rundir {

// The most shards an audit may have (--shard K/N, a manifest's "shards").
inline constexpr int kMaxShards = 10000;

struct Shard {
  int index = 0;  // 0-based
  int count = 1;
  bool operator==(const Shard&) const = default;
};

// The value of an environment variable, or none when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
// This process's environment (getenv).
EnvironmentLookup process_environment();

// `--shard`: "K/N" (0 <= K < N), or "auto" / "auto/N": the index (and count) from the environment
// of a Slurm job array (SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, or SLURM_ARRAY_TASK_MIN,
// _MAX and _STEP) or of a Kubernetes Indexed Job (JOB_COMPLETION_INDEX; its count is the Job's
// completions, which only "auto/N" can give). InputError saying what is wrong: a malformed value,
// an index out of range, an array that is not an evenly spaced range, both environments or
// neither.
Shard parse_shard(const std::string& text, const EnvironmentLookup& environment);

std::string shard_text(const Shard& shard);  // "2/4"
inline int shard_of_run(int run, int shard_count) {
  return run % shard_count;
}
// The runs of `shard` among `planned_runs` runs, in order.
std::vector<int> runs_of_shard(const Shard& shard, int planned_runs);

// InputError unless a shard of an audit of `planned_runs` runs into `out_dir` can be started as
// asked: a shard never removes the other shards' runs (`overwrite`), makes no report
// (`report_files`: compare of the folder makes it), and has a run to train.
void check_shard_request(const Shard& shard, bool overwrite, bool report_files,
                         std::size_t planned_runs, const std::filesystem::path& out_dir);

// "audit.shard-002.lock": held exclusively by the process training shard 2 (its pid and host in
// it), so that one shard never runs twice at once and `compare` can say which shards still run.
std::string shard_lock_name(int index);
std::optional<int> shard_of_lock_name(const std::string& name);
// "pid 1234 on node-7": who holds shard `index`'s lock in `dir`, or none when no one does.
std::optional<std::string> shard_holder(const std::filesystem::path& dir, int index);
// Each shard's runs, missing runs, holder and hosts, from the whole traces of the audit's planned
// runs (`traces`, none where missing).
std::vector<compare::ShardState> shard_states(
    const std::filesystem::path& dir, int shard_count,
    const std::vector<std::optional<trace::Trace>>& traces);
// What a shard's process writes into its lock: "pid <pid> on <hostname>".
std::string this_process_note();

}  // namespace ra::rundir
