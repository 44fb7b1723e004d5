#pragma once
// The output folder of `run`, from creation to the first run: what the audit does with a folder
// that already holds files (refuse, overwrite, resume: audit/audit.h FolderUse), decided with the
// folder locked, and the guards that leave a folder as it was when the audit fails before any of
// its runs reached it.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "audit/audit_folder.h"
#include "audit/audit_options.h"
#include "audit/manifest.h"

namespace ra::audit {

// The output folder of an audit, created up front. If the audit fails before writing anything
// into a folder it created (missing data, no usable GPU), the folder is removed again, so a failed
// command leaves nothing behind; a folder that existed, or holds files, is kept.
class OutputFolder {
 public:
  explicit OutputFolder(const std::filesystem::path& path);
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

 private:
  std::filesystem::path path_;
  bool created_ = false;
  int exceptions_ = std::uncaught_exceptions();
};

// `run` without --out writes into its default folder, repro-audit-out/<spec name>: running the
// same command again must not trip over the audit the last one left there. When `dir` holds an
// audit (a readable manifest) and no audit runs in it, it is renamed to a sibling named by its
// creation time, "<dir>.2026-11-26T16-58-01Z" (another suffix -2, -3... when taken), and the new
// path returned; none when there is nothing to move (no folder, no manifest: the audit then
// treats the folder as before). InputError when an audit runs in it.
std::optional<std::filesystem::path> move_earlier_audit_aside(const std::filesystem::path& dir);

// What an audit call does with its folder, decided with the folder locked.
struct FolderPlan {
  AuditManifest manifest;
  std::vector<int> to_train;  // run indices, in order
  bool new_audit = true;      // false: resuming the folder's audit
};

// Decides, then prepares: inspect() looks at the folder and refuses (InputError) what options'
// folder_use does not allow, changing nothing; apply() removes what must go (--overwrite: the
// tool's own files; --resume: debris and the partial snapshots of runs to retrain), writes the
// manifest and says which runs to train. Every change is told through progress.notice.
class AuditFolderSetup {
 public:
  AuditFolderSetup(const std::filesystem::path& dir, const AuditOptions& o, AuditManifest requested,
                   const AuditProgress& progress)
      : dir_(dir), o_(o), requested_(std::move(requested)), progress_(progress) {}

  void inspect();
  FolderPlan apply();

 private:
  void notice(const std::string& message) const;
  [[noreturn]] void refuse_occupied() const;
  void check_same_audit() const;
  void clear_own_files();
  FolderPlan resume_plan();

  std::filesystem::path dir_;
  const AuditOptions& o_;
  AuditManifest requested_;
  const AuditProgress& progress_;
  FolderContents contents_;
  std::optional<AuditManifest> existing_;
  std::string manifest_error_;
};

// What an audit call reports before its runs train: the folder's audit id, the runs it trains and
// every planned run's trace file (run and exec share it).
AuditResult started_result(const FolderPlan& folder, const std::vector<PlannedRun>& plan,
                           const std::filesystem::path& out_dir);

// A new audit that fails before anything of its runs reached the folder (no usable GPU, a bad
// fault injection at step 0) takes its manifest back, so the folder is as it was.
class NewManifestGuard {
 public:
  NewManifestGuard(std::filesystem::path dir, bool armed) : dir_(std::move(dir)), armed_(armed) {}
  NewManifestGuard(const NewManifestGuard&) = delete;
  NewManifestGuard& operator=(const NewManifestGuard&) = delete;
  ~NewManifestGuard();

 private:
  std::filesystem::path dir_;
  bool armed_;
  int exceptions_ = std::uncaught_exceptions();
};

// The report file's name when it lies in the audit folder (else none): recorded in the manifest so
// that --overwrite knows it as the tool's own.
std::optional<std::string> report_in_folder(const std::filesystem::path& report,
                                            const std::filesystem::path& dir);

}  // namespace ra::audit
