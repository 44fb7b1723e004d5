#pragma once
// The shared output folder of a sharded audit (rundir/shard.h), from the shard's start to its first
// run: whichever shard comes first creates the manifest (exactly one can: create_manifest), the
// others join the audit it names when they plan the same runs for the same number of shards, and
// each shard prepares only what is its own (the debris of its own runs). The folder's lock is
// shared by the shards; each shard holds its own shard lock, so it never runs twice at once.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rundir/audit_folder.h"
#include "rundir/audit_folder_setup.h"
#include "rundir/manifest.h"
#include "rundir/shard.h"

namespace ra::rundir {

struct ShardPlan {
  AuditManifest manifest;
  bool created_manifest = false;
  std::vector<int> to_train;       // the shard's runs without a whole trace, in order
  std::vector<int> already_whole;  // the shard's runs whole in the folder (a rerun shard's)
};

// inspect() refuses (InputError) a folder this shard cannot join, changing nothing: another
// audit's manifest (or one planned for another shard count), or audit files without a manifest.
// apply() creates or joins the manifest (a manifest created meanwhile by another shard is checked
// like one found), removes the debris of the shard's runs and says which to train. Every change
// is told through `notice` (joining the audit too), starting the audit through `info`.
class ShardFolderSetup {
 public:
  ShardFolderSetup(const std::filesystem::path& dir, const Shard& shard, AuditManifest requested,
                   FolderNotice notice, FolderNotice info)
      : dir_(dir),
        shard_(shard),
        requested_(std::move(requested)),
        notice_(std::move(notice)),
        info_(std::move(info)) {}

  void inspect();
  ShardPlan apply();

 private:
  void check_joinable(const AuditManifest& existing) const;
  void notice(const std::string& message) const;
  void info(const std::string& message) const;

  std::filesystem::path dir_;
  Shard shard_;
  AuditManifest requested_;
  FolderNotice notice_;
  FolderNotice info_;
};

// The lock a shard holds while it runs: the folder's lock, shared with the other shards, and its
// own shard lock (rundir/shard.h shard_lock_name), exclusive. InputError naming the folder and who
// holds what when either cannot be taken.
class ShardLocks {
 public:
  ShardLocks(const std::filesystem::path& dir, const Shard& shard);

 private:
  FolderLock folder_;
  std::optional<FileLock> shard_;
};

}  // namespace ra::rundir
