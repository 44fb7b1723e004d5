// The default output folder's rule, shared by `run` and `exec` (default_folder.h).
#include "default_folder.h"

#include <spdlog/spdlog.h>

#include "rundir/audit_folder_setup.h"

namespace ra::app {

void move_earlier_default_audit(const std::filesystem::path& out_dir, bool out_given,
                                rundir::FolderUse use, bool shard) {
  if (out_given || use != rundir::FolderUse::fresh || shard) return;
  if (const auto moved = rundir::move_earlier_audit_aside(out_dir)) {
    spdlog::warn("moved the earlier audit in {} to {}", out_dir.string(), moved->string());
  }
}

}  // namespace ra::app
