#pragma once
// Where `run` and `compare` may write their report files (--json, --junit, --html), checked
// before any work: never over a file the audit reads or writes (its manifest, lock, traces,
// snapshots, a trace being compared, the spec), never two reports into one file, and never into a
// folder that does not exist. A report written over a trace would make the audit impossible to
// compare or resume; found only after the training, a missing folder would cost the whole run.
#include <filesystem>
#include <vector>

namespace ra::rundir {

struct ReportPathContext {
  // Folders whose files repro-audit manages: the audit's --out; compare's folders, and the folders
  // of the trace files it compares (their snapshots live there).
  std::vector<std::filesystem::path> audit_folders;
  // Files the command reads: the spec, the traces compared.
  std::vector<std::filesystem::path> inputs;
};

// InputError (exit 2) naming the option's path and the file it would replace. `reports`: the
// report paths given ("" and "-" are no files and are skipped).
void check_report_paths(const std::vector<std::filesystem::path>& reports,
                        const ReportPathContext& context);

}  // namespace ra::rundir
