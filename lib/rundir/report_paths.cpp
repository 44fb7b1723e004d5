#include "rundir/report_paths.h"

#include <string>

#include "core/error.h"
#include "rundir/audit_folder.h"
#include "rundir/shard.h"

namespace ra::rundir {
namespace {

namespace fs = std::filesystem;

// The path as the file system will resolve it (links in existing parts followed), for comparing.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path absolute = fs::absolute(p, ec);
  if (ec) return p.lexically_normal();
  fs::path canonical = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

// Whether `name` in an audit folder is a name repro-audit writes there.
bool managed_name(const std::string& name) {
  const std::optional<std::string> target = atomic_write_target(name);
  const std::string base = target.value_or(name);
  return base == kManifestName || base == kLockName || shard_of_lock_name(base) ||
         run_of_trace_name(base) || run_of_snapshot_folder_name(base);
}

// Why a report may not go to `report` (resolved), or "".
std::string conflict(const fs::path& report, const ReportPathContext& context) {
  for (const fs::path& input : context.inputs) {
    if (resolved(input) == report) return "it is an input of this command";
  }
  const std::string name = report.filename().string();
  const fs::path parent = report.parent_path();
  bool in_audit_folder = false;  // `run` makes its folder: the report's folder need not exist yet
  for (const fs::path& folder : context.audit_folders) {
    const fs::path dir = resolved(folder);
    in_audit_folder = in_audit_folder || parent == dir;
    if (parent == dir && managed_name(name)) {
      return "it is a file of the audit in " + folder.string() + " (" + name + ")";
    }
    if (parent.parent_path() == dir && run_of_snapshot_folder_name(parent.filename().string())) {
      return "it is in the snapshot folder " + parent.filename().string() + " of the audit in " +
             folder.string();
    }
  }
  std::error_code ec;
  if (fs::is_directory(report, ec)) return "it is a folder";
  if (!in_audit_folder && !fs::is_directory(parent, ec)) {
    return "its folder " + parent.string() + " does not exist";
  }
  return "";
}

}  // namespace

void check_report_paths(const std::vector<fs::path>& reports, const ReportPathContext& context) {
  std::vector<fs::path> seen;
  for (const fs::path& report : reports) {
    if (report.empty() || report == "-") continue;
    const fs::path path = resolved(report);
    for (const fs::path& other : seen) {
      if (other == path) {
        throw InputError("report file " + report.string() +
                         " is named twice: each report needs a file of its own");
      }
    }
    seen.push_back(path);
    if (const std::string why = conflict(path, context); !why.empty()) {
      throw InputError("report file " + report.string() + " cannot be written: " + why +
                       "; give another path (nothing was done)");
    }
  }
}

}  // namespace ra::rundir
