#include "rundir/audit_folder.h"

#include <unistd.h>

#include <algorithm>

#include "core/directory.h"
#include "core/error.h"
#include "rundir/shard.h"

namespace ra::rundir {
namespace {

namespace fs = std::filesystem;

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// The run of "run-NNN" spelt exactly as run_name() spells it.
std::optional<int> run_of_stem(std::string_view stem) {
  if (!stem.starts_with("run-")) return std::nullopt;
  const std::string_view digits = stem.substr(4);
  if (!all_digits(digits) || digits.size() > 9) return std::nullopt;
  const int run = std::stoi(std::string(digits));
  if (run_name(run) != stem) return std::nullopt;
  return run;
}

// A name the tool writes, found as a link or another kind of file than it writes there: never
// followed, replaced or removed (core/directory.h).
void refuse(FolderContents& c, const Directory& d, const std::string& name,
            const std::string& relative, const char* expected) {
  c.refused.push_back(relative + " (" + d.describe(name) + ", not " + expected + ")");
}

// Classifies the entries of one run-NNN/ folder into `c` (names prefixed with the folder's).
void scan_run_folder(const Directory& folder, const std::string& folder_name, FolderContents& c) {
  for (const std::string& name : folder.names()) {
    const std::string relative = folder_name + "/" + name;
    const bool file = folder.kind(name) == Directory::Kind::file;
    const std::optional<std::string> target = atomic_write_target(name);
    const bool snapshot = is_snapshot_file_name(name);
    const bool temporary = target && is_snapshot_file_name(*target);
    if (name == kCheckpointFolderName) {
      // The run's checkpoint folder, the tool's whole (what the script saved there included).
      if (folder.kind(name) != Directory::Kind::folder) {
        refuse(c, folder, name, relative, "a folder");
      } else {
        c.own.push_back(relative + "/");
      }
    } else if ((snapshot || temporary) && !file) {
      refuse(c, folder, name, relative, "a regular file");
    } else if (snapshot) {
      c.own.push_back(relative);
    } else if (temporary) {
      c.debris.push_back(relative);
    } else {
      c.unrecognised.push_back(relative);
    }
  }
}

// Removes `relative` ("run-001/weights-final.safetensors" or "audit.json"), relative to `d`.
// A name ending in "/" is a folder the tool owns whole ("run-001/checkpoints/"), removed with all
// it holds.
void remove_relative(const Directory& d, const std::string& relative) {
  const std::size_t slash = relative.find('/');
  if (slash == std::string::npos) {
    d.remove_file(relative);
    return;
  }
  if (const auto folder = d.subfolder(relative.substr(0, slash), false)) {
    std::string name = relative.substr(slash + 1);
    if (name.ends_with('/')) {
      name.pop_back();
      folder->remove_tree(name);
    } else {
      folder->remove_file(name);
    }
  }
}

}  // namespace

std::string name_list(const std::vector<std::string>& items, std::size_t max_items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  if (items.size() > max_items) out += " and " + std::to_string(items.size() - max_items) + " more";
  return out;
}

std::string run_numbers(const std::vector<int>& runs) {
  std::string out;
  for (int r : runs) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string describe_audit(const AuditManifest& m) {
  return "audit " + m.audit_id + " of spec '" + m.spec.value("name", "") + "', " +
         std::to_string(m.runs.size()) + " run(s)" +
         (m.shards > 0 ? " in " + std::to_string(m.shards) + " shards" : std::string()) +
         ", created " + m.created;
}

std::optional<int> run_of_trace_name(const std::string& name) {
  const std::string suffix = ".trace.jsonl";
  if (!name.ends_with(suffix)) return std::nullopt;
  return run_of_stem(std::string_view(name).substr(0, name.size() - suffix.size()));
}

std::optional<int> run_of_snapshot_folder_name(const std::string& name) {
  return run_of_stem(name);
}

std::optional<std::string> atomic_write_target(const std::string& name) {
  // "<target>.tmp-<pid>-<n>" (core/atomic_file.cpp temporary_for).
  const std::size_t tmp = name.rfind(".tmp-");
  if (tmp == std::string::npos || tmp == 0) return std::nullopt;
  const std::string_view rest = std::string_view(name).substr(tmp + 5);
  const std::size_t dash = rest.find('-');
  if (dash == std::string_view::npos || !all_digits(rest.substr(0, dash)) ||
      !all_digits(rest.substr(dash + 1))) {
    return std::nullopt;
  }
  return name.substr(0, tmp);
}

bool is_snapshot_file_name(const std::string& name) {
  if (name == "batches.json" || name == "weights-initial.safetensors" ||
      name == "weights-final.safetensors" || name == "kept-outputs.bin" ||
      name == "cudnn-api.log" || name == "kept-op.pt" || name == "replay.json" ||
      name == "predictions.npy" || name == kCommandLogName ||
      name == std::string(kCommandLogName) + ".1" || name == kFailedTraceName) {
    return true;
  }
  // A data-parallel run's other ranks' traces (rundir/rank_traces.h): "rank-<R>.trace.jsonl", and
  // "failed-rank-<R>.trace.jsonl" once the run failed.
  constexpr std::string_view kRankSuffix = ".trace.jsonl";
  for (std::string_view prefix : {"rank-", "failed-rank-"}) {
    if (!name.starts_with(prefix) || !name.ends_with(kRankSuffix)) continue;
    const std::string_view rank = std::string_view(name).substr(
        prefix.size(), name.size() - prefix.size() - kRankSuffix.size());
    if (!rank.empty() && all_digits(rank)) return true;
  }
  // A run's checkpoints (train/checkpoint.h): "checkpoint-step-<S>.json" and ".safetensors"; of
  // an exec run (lib/python/repro_audit/checkpoint.py) the script's ".pt" and the recorder's
  // ".recorder.json", and a data-parallel run's rank R's "checkpoint-step-<S>.rank-<R>.pt" and
  // ".rank-<R>.recorder.json" (rank 0 keeps the run's names).
  constexpr std::string_view kCheckpoint = "checkpoint-step-";
  for (std::string_view suffix : {".json", ".safetensors", ".pt", ".recorder.json"}) {
    if (!name.starts_with(kCheckpoint) || !name.ends_with(suffix)) continue;
    std::string_view step = std::string_view(name).substr(
        kCheckpoint.size(), name.size() - kCheckpoint.size() - suffix.size());
    if (all_digits(step)) return true;
    const std::size_t rank_at = step.find(".rank-");
    if (suffix != ".pt" && suffix != ".recorder.json") continue;
    if (rank_at == std::string_view::npos) continue;
    const std::string_view rank = step.substr(rank_at + 6);
    step = step.substr(0, rank_at);
    if (!step.empty() && all_digits(step) && !rank.empty() && all_digits(rank)) return true;
  }
  const std::string suffix = ".safetensors";
  if (!name.ends_with(suffix)) return false;
  const std::string_view stem = std::string_view(name).substr(0, name.size() - suffix.size());
  for (std::string_view prefix : {"weights-epoch-", "weights-step-"}) {
    if (stem.starts_with(prefix) && all_digits(stem.substr(prefix.size()))) return true;
  }
  return false;
}

bool FolderContents::holds_audit() const {
  return has_manifest || !trace_runs.empty() ||
         std::any_of(own.begin(), own.end(),
                     [](const std::string& f) { return f.find('/') != std::string::npos; });
}

FolderContents scan_audit_folder(const fs::path& dir,
                                 const std::vector<std::string>& report_files) {
  FolderContents c;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return c;
  const Directory d = Directory::open(dir);
  for (const std::string& name : d.names()) {
    const Directory::Kind kind = d.kind(name);
    // Gone since the folder was listed: a run's streamed trace renamed over its name meanwhile
    // (trace/trace_file_writer.h), by another shard or a run of this audit still training.
    if (kind == Directory::Kind::absent) continue;
    const bool is_dir = kind == Directory::Kind::folder;
    const bool is_file = kind == Directory::Kind::file;
    const std::optional<std::string> target = atomic_write_target(name);
    const auto run = run_of_trace_name(name);
    const auto folder_run = run_of_snapshot_folder_name(name);
    const bool managed_file = name == kManifestName || name == kLockName || name == kPinFileName ||
                              shard_of_lock_name(name) || run ||
                              (target && (*target == kManifestName || *target == kPinFileName ||
                                          run_of_trace_name(*target)));
    if (managed_file && !is_file) {
      refuse(c, d, name, name, "a regular file");
    } else if (folder_run && !is_dir) {
      refuse(c, d, name, name, "a folder");
    } else if (name == kManifestName) {
      c.has_manifest = true;
      c.own.push_back(name);
    } else if (name == kLockName || name == kPinFileName || shard_of_lock_name(name)) {
      c.own.push_back(name);
    } else if (run) {
      c.trace_runs.push_back(*run);
      c.own.push_back(name);
    } else if (folder_run) {
      c.snapshot_runs.push_back(*folder_run);
      scan_run_folder(*d.subfolder(name, false), name, c);
    } else if (managed_file) {
      c.debris.push_back(name);
    } else if (is_file &&
               std::find(report_files.begin(), report_files.end(), name) != report_files.end()) {
      c.own.push_back(name);
    } else if (name.starts_with("run-") || name.ends_with(".trace.jsonl")) {
      c.unrecognised.push_back(name);
    } else {
      c.other.push_back(name);
    }
  }
  for (auto* list : {&c.own, &c.debris, &c.unrecognised, &c.other, &c.refused})
    std::sort(list->begin(), list->end());
  std::sort(c.trace_runs.begin(), c.trace_runs.end());
  std::sort(c.snapshot_runs.begin(), c.snapshot_runs.end());
  return c;
}

void refuse_foreign_kinds(const fs::path& dir, const FolderContents& c) {
  if (c.refused.empty()) return;
  throw InputError("audit folder " + dir.string() + " holds " + name_list(c.refused, 6) +
                   ": names repro-audit writes, as something it does not write there. It never "
                   "follows, replaces or removes them (a link could send its writes and deletes "
                   "anywhere); move them away, or give another --out");
}

std::vector<std::string> remove_own_files(const fs::path& dir, const FolderContents& c) {
  const Directory d = Directory::open(dir);
  for (const std::string& f : c.own) {
    // The folder's lock file is this audit's lock. Shard locks are stale here: no shard runs
    // while this audit holds the folder's lock exclusively.
    if (f != kLockName) remove_relative(d, f);
  }
  remove_debris(dir, c);
  for (int run : c.snapshot_runs) d.remove_empty_folder(run_name(run));
  std::vector<std::string> left = c.unrecognised;
  left.insert(left.end(), c.other.begin(), c.other.end());
  std::sort(left.begin(), left.end());
  return left;
}

void remove_debris(const fs::path& dir, const FolderContents& c) {
  if (c.debris.empty()) return;
  const Directory d = Directory::open(dir);
  for (const std::string& f : c.debris) remove_relative(d, f);
}

void remove_run_snapshots(const fs::path& dir, int run) {
  const Directory d = Directory::open(dir);
  const std::optional<Directory> folder = d.subfolder(run_name(run), false);  // never a link
  if (!folder) return;
  for (const std::string& name : folder->names()) {
    const auto target = atomic_write_target(name);
    if (name == kCheckpointFolderName) {
      folder->remove_tree(name);  // refuses a link under the name
    } else if (is_snapshot_file_name(name) || (target && is_snapshot_file_name(*target))) {
      folder->remove_file(name);  // refuses a link or a folder under such a name
    }
  }
  d.remove_empty_folder(run_name(run));
}

FolderLock::FolderLock(const fs::path& dir, FileLock::Mode mode) {
  const std::string pid = std::to_string(static_cast<long>(::getpid())) + "\n";
  std::optional<FileLock> lock = FileLock::try_lock(dir / kLockName, mode, pid);
  if (!lock) {
    const std::optional<long> holder_pid = holder(dir);
    const bool shards = holder_pid && *holder_pid == 0;
    throw InputError(
        "audit folder " + dir.string() + " is in use by " +
        (shards ? std::string("the shards of an audit")
                : "another audit" + (holder_pid && *holder_pid > 0
                                         ? " (pid " + std::to_string(*holder_pid) + ")"
                                         : std::string())) +
        (mode == FileLock::Mode::shared && !shards
             ? ": a shard cannot join a folder while an audit runs there in one process; wait for "
               "it to end, or give another --out"
             : ": two audits cannot share a folder; wait for it to end, or give another --out"));
  }
  lock_.emplace(std::move(*lock));
}

std::optional<long> FolderLock::holder(const fs::path& dir) {
  const std::optional<std::string> note = FileLock::holder(dir / kLockName);
  if (!note) return std::nullopt;
  const long pid = std::strtol(note->c_str(), nullptr, 10);
  return pid > 0 ? pid : 0;
}

}  // namespace ra::rundir
