// The audit folder of `run`: created, inspected and prepared before the first run trains
// (rundir/audit_folder_setup.h).
#include "rundir/audit_folder_setup.h"

#include <algorithm>
#include <exception>

#include "core/error.h"
#include "rundir/folder_traces.h"

namespace ra::rundir {
std::optional<std::string> report_in_folder(const std::filesystem::path& report,
                                            const std::filesystem::path& dir) {
  if (report.empty() || report == "-") return std::nullopt;
  std::error_code ec;
  const auto parent = std::filesystem::weakly_canonical(std::filesystem::absolute(report, ec), ec);
  const auto folder = std::filesystem::weakly_canonical(std::filesystem::absolute(dir, ec), ec);
  if (ec || parent.parent_path() != folder) return std::nullopt;
  return parent.filename().string();
}

std::optional<std::filesystem::path> move_earlier_audit_aside(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || !fs::exists(dir / kManifestName, ec)) return std::nullopt;
  const FolderLock lock(dir);  // never move an audit that runs
  AuditManifest earlier;
  try {
    earlier = read_manifest(dir);
  } catch (const InputError&) {
    return std::nullopt;  // not an audit this tool can vouch for: the folder rules apply
  }
  std::string stamp = earlier.created;  // "2026-11-26T16:58:01Z": no ':' in a file name
  std::replace(stamp.begin(), stamp.end(), ':', '-');
  const std::string base = dir.filename().string() + "." + stamp;
  fs::path target = dir.parent_path() / base;
  for (int n = 2; fs::exists(fs::symlink_status(target, ec)); ++n) {
    target = dir.parent_path() / (base + "-" + std::to_string(n));
  }
  fs::rename(dir, target, ec);
  if (ec) {
    throw InputError("cannot move the earlier audit in " + dir.string() + " to " + target.string() +
                     ": " + ec.message() + "; give --out, --resume or --overwrite");
  }
  // The lock file moved with the folder, where its release would no longer find it by name
  // (issue 61: a moved-aside audit kept a stale lock): removed now, while it is still held.
  fs::remove(target / kLockName, ec);
  return target;
}

OutputFolder::OutputFolder(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  created_ = std::filesystem::create_directories(path, ec);
  if (ec) throw InputError("cannot create output folder " + path.string() + ": " + ec.message());
}

OutputFolder::~OutputFolder() {
  std::error_code ec;
  if (created_ && std::uncaught_exceptions() > exceptions_ &&
      std::filesystem::is_empty(path_, ec) && !ec) {
    std::filesystem::remove(path_, ec);
  }
}

void AuditFolderSetup::inspect() {
  contents_ = scan_audit_folder(dir_);
  refuse_foreign_kinds(dir_, contents_);
  if (contents_.has_manifest) {
    try {
      existing_ = read_manifest(dir_);
      contents_ = scan_audit_folder(dir_, existing_->report_files);
    } catch (const InputError& e) {
      manifest_error_ = e.what();
    }
  }
  switch (use_) {
    case FolderUse::fresh:
      if (contents_.holds_audit() || !contents_.unrecognised.empty()) refuse_occupied();
      break;
    case FolderUse::overwrite:
      // Its own files are known by content: an audit.json that is no manifest is not its own.
      if (contents_.has_manifest && !manifest_error_.empty()) {
        throw InputError("--overwrite: " + (dir_ / kManifestName).string() +
                         " is not a repro-audit manifest (" + manifest_error_ +
                         "), so not repro-audit's to remove; move it away, or give another --out");
      }
      break;
    case FolderUse::resume:
      if (!contents_.has_manifest && contents_.holds_audit()) {
        throw InputError("cannot resume the audit in " + dir_.string() +
                         ": it has no audit.json (an audit from before manifests, or one killed "
                         "before it began) holding " +
                         name_list(contents_.own, 6) +
                         "; use --overwrite to start over, or give another --out");
      }
      if (!manifest_error_.empty()) {
        throw InputError("cannot resume the audit in " + dir_.string() + ": " + manifest_error_ +
                         "; use --overwrite to start over, or give another --out");
      }
      if (existing_) check_same_audit();
      break;
  }
}

FolderPlan AuditFolderSetup::apply() {
  FolderPlan plan;
  if (use_ == FolderUse::resume && existing_) {
    plan = resume_plan();
  } else {
    if (use_ == FolderUse::overwrite) {
      clear_own_files();
    } else if (use_ == FolderUse::resume) {
      notice("nothing to resume in " + dir_.string() + ": starting the audit");
    }
    remove_debris(dir_, contents_);
    plan.manifest = requested_;
    plan.manifest.audit_id = new_audit_id();
    plan.manifest.created = utc_now();
    for (const PlannedRun& p : plan.manifest.runs) plan.to_train.push_back(p.index);
  }
  for (const std::filesystem::path& file : report_files_) {
    if (const auto report = report_in_folder(file, dir_)) {
      auto& reports = plan.manifest.report_files;
      if (std::find(reports.begin(), reports.end(), *report) == reports.end())
        reports.push_back(*report);
    }
  }
  write_manifest(dir_, plan.manifest);
  return plan;
}

void AuditFolderSetup::notice(const std::string& message) const {
  if (notice_) notice_(message);
}

void AuditFolderSetup::refuse_occupied() const {
  std::string what;
  if (existing_) {
    what = "holds another audit (" + describe_audit(*existing_) + ")";
  } else if (contents_.has_manifest) {
    what = "holds an audit whose manifest cannot be read (" + manifest_error_ + ")";
  } else if (contents_.holds_audit()) {
    what = "holds an earlier audit without a manifest (" + name_list(contents_.own, 6) + ")";
  } else {
    what =
        "holds run files repro-audit did not write (" + name_list(contents_.unrecognised, 6) + ")";
  }
  throw InputError(
      "output folder " + dir_.string() + " " + what +
      ": an audit folder holds one audit. Use --resume to finish the audit there, --overwrite "
      "to replace it (removes only repro-audit's own files), or give another --out");
}

void AuditFolderSetup::check_same_audit() const {
  const std::vector<std::string> differences = manifest_differences(*existing_, requested_);
  if (differences.empty()) return;
  std::string lines;
  for (const std::string& d : differences) lines += "\n  " + d;
  throw InputError("cannot resume the audit in " + dir_.string() + " (" +
                   describe_audit(*existing_) + "): it is not the audit requested:" + lines +
                   "\nresume with the spec and options it was started with, use --overwrite to "
                   "replace it, or give another --out");
}

void AuditFolderSetup::clear_own_files() {
  const std::vector<std::string> left = remove_own_files(dir_, contents_);
  if (!contents_.own.empty() || !contents_.debris.empty()) {
    notice("--overwrite: removed " +
           std::to_string(contents_.own.size() + contents_.debris.size()) +
           " file(s) of the earlier audit in " + dir_.string());
  }
  if (!left.empty()) {
    notice("--overwrite: left in place, not repro-audit's: " + name_list(left, 10));
  }
  contents_ = scan_audit_folder(dir_);
}

FolderPlan AuditFolderSetup::resume_plan() {
  FolderPlan plan;
  plan.new_audit = false;
  plan.manifest = *existing_;
  ManifestRuns runs = read_manifest_runs(dir_, plan.manifest, DamagedTrace::retrain);
  for (const compare::MissingRun& m : runs.check.missing_runs) plan.to_train.push_back(m.run);
  // What killed attempts left: temporaries of atomic writes and the runs' partial snapshots.
  remove_debris(dir_, contents_);
  for (int run : plan.to_train) remove_run_snapshots(dir_, run);
  notice("resuming " + describe_audit(plan.manifest) + " in " + dir_.string() + ": " +
         (plan.to_train.empty() ? std::string("every run is whole, nothing to train")
                                : "training run(s) " + run_numbers(plan.to_train)) +
         (runs.check.runs.empty() ? "" : "; whole: run(s) " + run_numbers(runs.check.runs)));
  for (const compare::ForeignFile& f : runs.check.foreign_files) {
    notice("not of this audit, left in place unless retrained: " + f.file + " (" + f.reason + ")");
  }
  return plan;
}

NewManifestGuard::~NewManifestGuard() {
  if (!armed_ || std::uncaught_exceptions() <= exceptions_) return;
  try {
    const FolderContents c = scan_audit_folder(dir_);
    if (c.trace_runs.empty() && c.snapshot_runs.empty()) {
      std::error_code ec;
      std::filesystem::remove(dir_ / kManifestName, ec);
    }
  } catch (...) {  // a destructor during unwinding must not throw; the manifest then stays
  }
}

}  // namespace ra::rundir
