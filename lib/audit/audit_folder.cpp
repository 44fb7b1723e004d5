#include "audit/audit_folder.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "audit/rank_traces.h"
#include "audit/shard.h"
#include "core/directory.h"
#include "core/error.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

namespace ra::audit {
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

std::string seeds_text(std::uint64_t init, std::uint64_t data, std::uint64_t dropout) {
  return "init " + std::to_string(init) + ", data " + std::to_string(data) + ", dropout " +
         std::to_string(dropout);
}

// Why a whole trace under planned run `run`'s name is not that run of `m`; "" when it is.
std::string not_of_audit(const trace::Trace& t, const AuditManifest& m, int run) {
  const trace::TraceHeader& h = t.header;
  if (h.audit_id.empty()) return "has no audit id (written by an older repro-audit or elsewhere)";
  if (h.audit_id != m.audit_id) return "belongs to audit " + h.audit_id;
  if (h.run_index != run) return "its header says run " + std::to_string(h.run_index);
  if (h.spec_digest != m.spec_digest) return "its spec digest differs from the manifest's";
  const PlannedRun& p = m.runs[static_cast<std::size_t>(run)];
  if (h.seed_group != p.group || h.seed_init != p.seeds.init || h.seed_data != p.seeds.data ||
      h.seed_dropout != p.seeds.dropout) {
    return "its seeds (" + h.seed_group + ": " +
           seeds_text(h.seed_init, h.seed_data, h.seed_dropout) + ") are not the manifest's (" +
           p.group + ": " + seeds_text(p.seeds.init, p.seeds.data, p.seeds.dropout) + ")";
  }
  return "";
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
  // A data-parallel run's other ranks' traces (audit/rank_traces.h): "rank-<R>.trace.jsonl", and
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

namespace {

// The folder's files that are not of its audit: runs past the plan, names the tool does not
// write, names it never follows.
void note_foreign_files(const FolderContents& c, int planned, compare::AuditFolderCheck& check) {
  for (int run : c.trace_runs) {
    if (run >= planned)
      check.foreign_files.push_back(
          {trace_name(run), "run " + std::to_string(run) + " is not in the manifest"});
  }
  for (int run : c.snapshot_runs) {
    if (run >= planned)
      check.foreign_files.push_back(
          {run_name(run) + "/", "run " + std::to_string(run) + " is not in the manifest"});
  }
  for (const std::string& f : c.unrecognised) {
    check.foreign_files.push_back({f, "not a file repro-audit writes"});
  }
  for (const std::string& f : c.refused) {
    check.foreign_files.push_back({f, "not read: repro-audit never follows such a name"});
  }
}

// What an interrupted run's partial trace (trace/trace_file_writer.h) holds, in words: "12 steps
// recorded, no end record". Never an error: the file may be cut anywhere, or still growing.
std::string partial_trace_state(const fs::path& file) {
  try {
    const trace::PartialTrace t = trace::read_partial_trace(file);
    const std::string steps =
        std::to_string(t.steps) + (t.steps == 1 ? " step recorded" : " steps recorded");
    return t.final ? steps + ", ended but never renamed" : steps + ", no end record";
  } catch (const std::exception& e) {
    return std::string("unreadable: ") + e.what();
  }
}

// Why a run without a trace has none: its command failed, when the run's folder keeps the failed
// run's trace (exec: failed.trace.jsonl), whose end record names the exception; else no trace.
// Never an error: the file may be of any state.
std::string no_trace_reason(const fs::path& dir, int run) {
  const std::string failed = run_name(run) + "/" + kFailedTraceName;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(dir / failed, ec))) {
    return "no trace " + trace_name(run);
  }
  try {
    const trace::PartialTrace t = trace::read_partial_trace(dir / failed);
    if (t.final && t.final->status == trace::RunStatus::failed) {
      return "the run " + trace::describe_failure(*t.final) + " (" + failed + ")";
    }
    return "no whole trace; the failed run's " + failed + " has " + std::to_string(t.steps) +
           (t.steps == 1 ? " step" : " steps") + " and no end record";
  } catch (const std::exception& e) {
    return "no whole trace; the failed run's " + failed + " is unreadable: " + e.what();
  }
}

}  // namespace

ManifestRuns read_manifest_runs(const fs::path& dir, const AuditManifest& m, DamagedTrace damaged) {
  const FolderContents c = scan_audit_folder(dir, m.report_files);
  ManifestRuns out;
  compare::AuditFolderCheck& check = out.check;
  check.folder = dir.string();
  check.audit_id = m.audit_id;
  check.planned_runs = static_cast<int>(m.runs.size());
  out.traces.resize(m.runs.size());
  const std::set<int> traced(c.trace_runs.begin(), c.trace_runs.end());

  // Partial traces of killed writers, by run: the reason a run is missing.
  std::map<int, std::string> partial;
  for (const std::string& f : c.debris) {
    if (const auto run = run_of_trace_name(atomic_write_target(f).value_or(""))) partial[*run] = f;
  }
  for (const PlannedRun& p : m.runs) {
    const std::string name = trace_name(p.index);
    std::string reason;
    if (!traced.contains(p.index)) {
      reason = partial.contains(p.index) ? "no whole trace, only the partial " + partial[p.index] +
                                               " (" + partial_trace_state(dir / partial[p.index]) +
                                               "; the audit was interrupted, or is still running)"
                                         : no_trace_reason(dir, p.index);
    } else {
      std::optional<trace::Trace> t;
      if (damaged == DamagedTrace::reject) {
        t = trace::read_trace_summary(dir / name);
      } else {
        try {
          t = trace::read_trace_summary(dir / name);
        } catch (const InputError& e) {
          reason = std::string("its trace is not whole: ") + e.what();
        }
      }
      if (t) {
        if (const std::string why = not_of_audit(*t, m, p.index); !why.empty()) {
          check.foreign_files.push_back({name, why});
          reason = "its trace " + name + " is not of this audit";
        } else if (t->failed()) {  // never compared as whole; --resume runs it again
          reason = "its trace " + name + " says the run " + trace::describe_failure(*t->final);
        } else if (std::string ranks = rank_traces_problem(*t, dir / name); !ranks.empty()) {
          reason = "the run " + ranks;  // a rank killed mid-run: --resume runs it again, whole
        } else {
          out.traces[static_cast<std::size_t>(p.index)] = std::move(t);
          check.runs.push_back(p.index);
          continue;
        }
      }
    }
    check.missing_runs.push_back({p.index, reason});
  }
  note_foreign_files(c, static_cast<int>(m.runs.size()), check);
  std::sort(
      check.foreign_files.begin(), check.foreign_files.end(),
      [](const compare::ForeignFile& a, const compare::ForeignFile& b) { return a.file < b.file; });
  // (Not when the holder is this process: an audit reading its own folder for its report.)
  if (const auto pid = FolderLock::holder(dir); pid && *pid != static_cast<long>(::getpid())) {
    check.notes.push_back(*pid == 0
                              ? "shards of this audit are running in this folder: their "
                                "missing runs may still come"
                              : "an audit is running in this folder (pid " + std::to_string(*pid) +
                                    "): its missing runs may still come");
  }
  if (m.shards > 0) {
    check.shards = m.shards;
    check.shard_states = shard_states(dir, m.shards, out.traces);
    for (compare::MissingRun& missing : check.missing_runs)
      missing.shard = shard_of_run(missing.run, m.shards);
  }
  return out;
}

UnvouchedTraces traces_without_manifest(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().ends_with(".trace.jsonl")) files.push_back(entry.path());
  }
  if (ec) throw InputError("cannot read folder " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw InputError("no audit.json and no *.trace.jsonl files in " + dir.string());

  UnvouchedTraces out;
  out.check.folder = dir.string();
  std::map<std::string, std::vector<std::string>> by_audit;  // audit id -> files
  for (const fs::path& f : files) {
    out.traces.push_back(trace::read_trace_summary(f));
    const std::string& id = out.traces.back().header.audit_id;
    by_audit[id.empty() ? "(none)" : id].push_back(f.filename().string());
    out.check.runs.push_back(out.traces.back().header.run_index);
  }
  // Traces that say they are of different audits are never compared as one audit.
  if (by_audit.size() > 1) {
    std::vector<std::string> groups;
    for (const auto& [id, names] : by_audit)
      groups.push_back("audit " + id + ": " + name_list(names, 4));
    throw InputError(dir.string() + " has no audit.json and its traces are of " +
                     std::to_string(by_audit.size()) + " audits (" + name_list(groups) +
                     "); compare the trace files you mean by name");
  }
  out.check.notes.push_back(
      "no audit.json: no manifest vouches that these traces are one audit's (a folder written "
      "before audit folders had manifests, or by hand); every *.trace.jsonl in it is compared");
  return out;
}

}  // namespace ra::audit
