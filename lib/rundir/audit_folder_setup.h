#pragma once
// The output folder of `run` and `exec`, from creation to the first run: what the audit does with
// a folder that already holds files (refuse, overwrite, resume: FolderUse), decided with the
// folder locked, and the guards that leave a folder as it was when the audit fails before any of
// its runs reached it.
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rundir/audit_folder.h"
#include "rundir/manifest.h"

namespace ra::rundir {

// What `run` does with an output folder that already holds files of an audit.
enum class FolderUse {
  fresh,      // refuse (InputError) a folder holding another audit or unrecognised run-* files
  overwrite,  // remove the tool's own files (only those), then start a new audit
  resume,     // finish the folder's audit: train only the runs without a whole trace
};

// Tells the user what a folder's setup did (files removed or left in place, runs resumed, a shard
// started or joined the audit): audit::AuditProgress's notice and info; empty: told to no one.
using FolderNotice = std::function<void(const std::string& message)>;

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

// Decides, then prepares: inspect() looks at the folder and refuses (InputError) what `use` does
// not allow, changing nothing; apply() removes what must go (--overwrite: the tool's own files;
// --resume: debris and the partial snapshots of runs to retrain), writes the manifest (listing
// those of `report_files`, the --json/--junit/--html paths, that lie in the folder) and says which
// runs to train. Every change is told through `notice`.
class AuditFolderSetup {
 public:
  AuditFolderSetup(const std::filesystem::path& dir, FolderUse use,
                   std::vector<std::filesystem::path> report_files, AuditManifest requested,
                   FolderNotice notice)
      : dir_(dir),
        use_(use),
        report_files_(std::move(report_files)),
        requested_(std::move(requested)),
        notice_(std::move(notice)) {}

  void inspect();
  FolderPlan apply();

 private:
  void notice(const std::string& message) const;
  [[noreturn]] void refuse_occupied() const;
  void check_same_audit() const;
  void clear_own_files();
  FolderPlan resume_plan();

  std::filesystem::path dir_;
  FolderUse use_;
  std::vector<std::filesystem::path> report_files_;
  AuditManifest requested_;
  FolderNotice notice_;
  FolderContents contents_;
  std::optional<AuditManifest> existing_;
  std::string manifest_error_;
};

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

}  // namespace ra::rundir
