#pragma once
// The files of an audit folder and what the tool may do with them (docs/trace-format.md "The
// audit folder"): which names are its own, what a folder holds, removing only its own files
// (--overwrite) or the debris of a killed audit (--resume), and the folder's lock. Which traces of
// a folder are the whole traces of its manifest's runs: rundir/folder_traces.h.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/file_lock.h"
#include "rundir/manifest.h"

namespace ra::rundir {

inline constexpr const char* kLockName = "audit.lock";
// Run 0's convolution algorithms, which the other runs are pinned to (deterministic autotune:
// audit/deterministic_autotune.h).
inline constexpr const char* kPinFileName = "algorithms.json";
// In run-NNN/ of an exec audit: the trace of a run that failed, moved out of the way (exec), and
// the output of the run's command (a bounded ring, core/process.h).
inline constexpr const char* kFailedTraceName = "failed.trace.jsonl";
inline constexpr const char* kCommandLogName = "command.log";
// In run-NNN/ of an exec audit: the run's folder for checkpoints (REPRO_AUDIT_CHECKPOINT_DIR),
// where the script saves what it resumes from and the recorder writes its files of an interrupt
// (docs/resume.md, "PyTorch"). Everything in it is the run's, whatever its name, removed with the
// run's other files (links as links, never what they name).
inline constexpr const char* kCheckpointFolderName = "checkpoints";

// "a, b, c and 4 more": names for a message, at most `max_items` of them.
std::string name_list(const std::vector<std::string>& items, std::size_t max_items = 8);
// "0, 2, 5": run numbers for a message.
std::string run_numbers(const std::vector<int>& runs);
// "audit 3f... of spec 'quick', 4 run(s), created 2026-...": an audit for a message.
std::string describe_audit(const AuditManifest& manifest);

// The run of a name the tool writes ("run-003.trace.jsonl", "run-003"), or none. Only the exact
// spelling run_name() gives: "run-3.trace.jsonl" or "run-0003" are not the tool's.
std::optional<int> run_of_trace_name(const std::string& name);
std::optional<int> run_of_snapshot_folder_name(const std::string& name);
// "<name>.tmp-<pid>-<n>", the temporary file of an atomic write of <name> (core/atomic_file.h):
// <name>, or none.
std::optional<std::string> atomic_write_target(const std::string& name);
// A file the tool puts into run-NNN/ (weights-initial/final/epoch-E/step-S.safetensors,
// batches.json, checkpoint-step-S.json/.safetensors; of PyTorch runs checkpoint-step-S.pt and
// .recorder.json (rank R of a data-parallel run: checkpoint-step-S.rank-R.pt and
// .rank-R.recorder.json), kept-outputs.bin,
// cudnn-api.log, command.log,
// failed.trace.jsonl).
bool is_snapshot_file_name(const std::string& name);

// What a folder holds, classified by name (nothing is read). Names are relative to the folder
// ("run-001/weights-final.safetensors"), sorted.
struct FolderContents {
  bool has_manifest = false;
  std::vector<std::string> own;     // the tool's files: manifest, traces, snapshots, lock, reports
  std::vector<std::string> debris;  // temporaries of atomic writes (a killed or running writer)
  std::vector<std::string> unrecognised;  // run-* and *.trace.jsonl names the tool does not write
  std::vector<std::string> other;         // anything else: never touched
  std::vector<int> trace_runs;            // runs with a run-NNN.trace.jsonl
  std::vector<int> snapshot_runs;         // runs with a run-NNN/ folder
  // Names the tool writes, found as something it does not write there (a symbolic link, a FIFO,
  // a folder where a file belongs), each "run-001 (a symbolic link, not a folder)": never
  // followed, replaced or removed, and refused by run (core/directory.h).
  std::vector<std::string> refused;
  // An audit (or part of one) is there: a manifest, traces or snapshot files.
  bool holds_audit() const;
};
// `report_files`: names the folder's manifest lists as reports the tool wrote there.
FolderContents scan_audit_folder(const std::filesystem::path& dir,
                                 const std::vector<std::string>& report_files = {});

// InputError (exit 2) listing contents.refused, when there is any: what run refuses to work
// beside, before it changes anything in the folder.
void refuse_foreign_kinds(const std::filesystem::path& dir, const FolderContents& contents);

// Removes the tool's own files and debris (and run-NNN/ folders left empty); returns what was
// left in place (unrecognised and other files), as names relative to `dir`. RuntimeFailure naming
// the file when one cannot be removed.
std::vector<std::string> remove_own_files(const std::filesystem::path& dir,
                                          const FolderContents& contents);
// Removes the debris of atomic writes (temporary files) in `dir` and its run-NNN/ folders.
void remove_debris(const std::filesystem::path& dir, const FolderContents& contents);
// Removes the snapshot files of one run (run-NNN/'s known files; the folder when left empty):
// what a killed attempt at the run left, before the run trains again.
void remove_run_snapshots(const std::filesystem::path& dir, int run);

// The lock of an audit folder, held by an audit from before it looks at the folder until its
// report is made: a FileLock (core/file_lock.h) on `dir`/audit.lock. An audit in one process holds
// it exclusively (the file holds its pid); the shards of a sharded audit (rundir/shard.h) share it.
// A second audit on the folder, or a shard beside an audit in one process, fails at once
// (InputError naming the folder and the holder's pid) instead of mixing its files with the
// first's.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& dir,
                      FileLock::Mode mode = FileLock::Mode::exclusive);

  // The pid holding `dir`'s lock (0 when it did not say: shards), or none when no audit holds it.
  static std::optional<long> holder(const std::filesystem::path& dir);

 private:
  std::optional<FileLock> lock_;
};

}  // namespace ra::rundir
