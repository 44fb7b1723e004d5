// The traces of an audit folder (rundir/folder_traces.h): which are its manifest's whole runs,
// and what a folder without a manifest holds.
#include "rundir/folder_traces.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "rundir/audit_folder.h"
#include "rundir/rank_traces.h"
#include "rundir/shard.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

namespace ra::rundir {
namespace {

namespace fs = std::filesystem;

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
      h.seed_dropout != p.seeds.dropout || h.seed_augment != p.seeds.augment) {
    return "its seeds (" + h.seed_group + ": " +
           seeds_text(h.seed_init, h.seed_data, h.seed_dropout) + ") are not the manifest's (" +
           p.group + ": " + seeds_text(p.seeds.init, p.seeds.data, p.seeds.dropout) + ")";
  }
  return "";
}

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

std::vector<trace::Trace> whole_runs(const std::filesystem::path& dir, ManifestRuns& runs) {
  std::vector<trace::Trace> traces;
  for (auto& t : runs.traces) {
    if (t) traces.push_back(std::move(*t));
  }
  if (traces.empty()) {
    // One line: the log escapes a line break inside a message (apps/printable_log.h).
    std::string why;
    for (const compare::MissingRun& m : runs.check.missing_runs) {
      why += (why.empty() ? " (" : "; ") + ("run " + std::to_string(m.run) + ": " + m.reason);
    }
    throw InputError(dir.string() + ": none of the " + std::to_string(runs.check.planned_runs) +
                     " runs of audit " + runs.check.audit_id + " has a whole trace" +
                     (why.empty() ? "" : why + ")"));
  }
  return traces;
}

std::filesystem::path snapshot_dir_of(const std::filesystem::path& trace_file) {
  std::string name = trace_file.filename().string();
  const std::string suffix = ".trace.jsonl";
  if (name.size() > suffix.size() && name.ends_with(suffix))
    name.resize(name.size() - suffix.size());
  return trace_file.parent_path() / name;
}

std::vector<std::filesystem::path> trace_files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().ends_with(".trace.jsonl")) files.push_back(entry.path());
  }
  if (ec) throw InputError("cannot read folder " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("no *.trace.jsonl files in " + dir.string());
  return files;
}

}  // namespace ra::rundir
