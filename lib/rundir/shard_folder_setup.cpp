// The shared folder of a sharded audit: created or joined (rundir/shard_folder_setup.h).
#include "rundir/shard_folder_setup.h"

#include <algorithm>
#include <system_error>

#include "core/error.h"
#include "rundir/folder_traces.h"

namespace ra::rundir {
ShardLocks::ShardLocks(const std::filesystem::path& dir, const Shard& shard)
    : folder_(dir, FileLock::Mode::shared) {
  shard_ = FileLock::try_lock(dir / shard_lock_name(shard.index), FileLock::Mode::exclusive,
                              this_process_note());
  if (!shard_) {
    throw InputError("shard " + shard_text(shard) + " of the audit in " + dir.string() +
                     " is already running (" +
                     shard_holder(dir, shard.index).value_or("its holder just ended") +
                     "): one shard trains its runs once at a time");
  }
}

void ShardFolderSetup::inspect() {
  FolderContents contents = scan_audit_folder(dir_);
  refuse_foreign_kinds(dir_, contents);
  std::error_code ec;
  // A manifest another shard created while the folder was read may be missing from the listing.
  if (!contents.has_manifest && std::filesystem::exists(dir_ / kManifestName, ec)) {
    contents.has_manifest = true;
  }
  if (contents.has_manifest) {
    check_joinable(read_manifest(dir_));
    return;
  }
  if (contents.holds_audit() || !contents.unrecognised.empty()) {
    throw InputError(
        "output folder " + dir_.string() + " holds " +
        (contents.holds_audit()
             ? "an earlier audit without a manifest (" + name_list(contents.own, 6)
             : "run files repro-audit did not write (" + name_list(contents.unrecognised, 6)) +
        "): shards start in an empty folder or join the audit of its manifest; "
        "give another --out, or clear it with `run --overwrite` first");
  }
}

ShardPlan ShardFolderSetup::apply() {
  ShardPlan plan;
  AuditManifest mine = requested_;
  mine.audit_id = new_audit_id();
  mine.created = utc_now();
  mine.created_by = "shard " + shard_text(shard_) + ", " + this_process_note();
  if (create_manifest(dir_, mine)) {
    plan.manifest = std::move(mine);
    plan.created_manifest = true;
    info("shard " + shard_text(shard_) + " started " + describe_audit(plan.manifest) + " in " +
         dir_.string());
  } else {
    plan.manifest = read_manifest(dir_);
    check_joinable(plan.manifest);
    notice(
        "shard " + shard_text(shard_) + " joined " + describe_audit(plan.manifest) + " in " +
        dir_.string() +
        (plan.manifest.created_by.empty() ? "" : " (started by " + plan.manifest.created_by + ")"));
  }

  const std::vector<int> mine_runs =
      runs_of_shard(shard_, static_cast<int>(plan.manifest.runs.size()));
  const ManifestRuns runs = read_manifest_runs(dir_, plan.manifest, DamagedTrace::retrain);
  for (int run : mine_runs) {
    const bool whole = runs.traces[static_cast<std::size_t>(run)].has_value();
    (whole ? plan.already_whole : plan.to_train).push_back(run);
  }
  // What a killed attempt at this shard left: temporaries of its own runs' writes and their
  // partial snapshots. Other shards' temporaries are theirs, in the middle of a write.
  FolderContents own_debris = scan_audit_folder(dir_);
  std::erase_if(own_debris.debris, [&](const std::string& name) {
    const std::string first = name.substr(0, name.find('/'));
    const auto target = atomic_write_target(first);
    const auto run = run_of_snapshot_folder_name(first) ? run_of_snapshot_folder_name(first)
                                                        : run_of_trace_name(target.value_or(""));
    return !run ||
           std::find(plan.to_train.begin(), plan.to_train.end(), *run) == plan.to_train.end();
  });
  remove_debris(dir_, own_debris);
  for (int run : plan.to_train) remove_run_snapshots(dir_, run);
  if (!plan.already_whole.empty()) {
    notice("shard " + shard_text(shard_) + ": run(s) " + run_numbers(plan.already_whole) +
           " already whole in the folder, not trained again");
  }
  return plan;
}

void ShardFolderSetup::check_joinable(const AuditManifest& existing) const {
  std::vector<std::string> differences = manifest_differences(existing, requested_);
  if (existing.shards != requested_.shards) {
    differences.insert(differences.begin(),
                       "shards: " +
                           (existing.shards == 0 ? std::string("none (an audit in one process)")
                                                 : std::to_string(existing.shards)) +
                           " in the folder, " + std::to_string(requested_.shards) + " requested");
  }
  if (differences.empty()) return;
  std::string lines;
  for (const std::string& d : differences) lines += "\n  " + d;
  throw InputError("shard " + shard_text(shard_) + " cannot join " + describe_audit(existing) +
                   " in " + dir_.string() + ": it is not the audit this shard plans:" + lines +
                   "\nevery shard must run the same spec and options; give another --out");
}

void ShardFolderSetup::notice(const std::string& message) const {
  if (notice_) notice_(message);
}

void ShardFolderSetup::info(const std::string& message) const {
  if (info_) info_(message);
}

}  // namespace ra::rundir
