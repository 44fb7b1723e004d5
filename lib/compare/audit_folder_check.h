#pragma once
// Plain types of where the compared runs came from when they came from an audit folder
// (ComparisonResult::sources, ComparisonOptions::audit_folders), apart from compare/compare.h:
// rundir fills them from a folder's manifest, lock and shards (rundir/audit_folder.h), the report
// says them (docs/report.md "Audit folders"), and the verdict reads whether a run is missing.
#include <string>
#include <vector>

namespace ra::compare {

// Where the compared runs came from when they came from an audit folder (compare DIR, run):
// docs/report.md "Audit folders".
struct MissingRun {
  int run = 0;         // the audit's run number (run-NNN)
  std::string reason;  // "no trace", "partial trace run-001.trace.jsonl.tmp-... (interrupted)"
  int shard = -1;      // the shard that trains it, in a sharded audit (rundir/shard.h)
};
// One shard of a sharded audit as its folder shows it.
struct ShardState {
  int index = 0;
  std::vector<int> runs;           // its planned runs
  std::vector<int> missing;        // those without a whole trace of the audit
  std::string running;             // who holds its lock ("pid 12 on node-3"); "" when no one
  std::vector<std::string> hosts;  // where its whole runs ran (trace environments), sorted
  bool finished() const { return missing.empty(); }
};
struct ForeignFile {
  std::string file;    // relative to the folder
  std::string reason;  // "run 7 is not in the manifest", "belongs to audit 3f..."
};
struct AuditFolderCheck {
  std::string folder;
  std::string audit_id;   // empty: no manifest vouches for the traces
  int planned_runs = 0;   // the manifest's runs (0 without one)
  std::vector<int> runs;  // the audit's run number of each compared trace, in report order
  std::vector<MissingRun> missing_runs;
  std::vector<ForeignFile> foreign_files;
  std::vector<std::string> notes;  // no manifest; an audit still running in the folder
  int shards = 0;                  // the manifest's shard count (0: an audit in one process)
  std::vector<ShardState> shard_states;
};

}  // namespace ra::compare
