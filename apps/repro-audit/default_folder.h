#pragma once
// The default output folder of `run` and `exec` (repro-audit-out/<name>) is no trap: the same
// command run again moves the audit the last one left there aside, so edit and re-run needs no
// --out, --overwrite or --resume. One rule for both subcommands.
#include <filesystem>

#include "audit/audit_options.h"

namespace ra::app {

// Moves the earlier audit in `out_dir` aside (audit::move_earlier_audit_aside) and says so on
// stderr, when the folder is the default one (`out_given` false), the audit is a fresh one and no
// shard: an explicit --out, --resume, --overwrite and shards keep the strict folder rules.
void move_earlier_default_audit(const std::filesystem::path& out_dir, bool out_given,
                                rundir::FolderUse use, bool shard);

}  // namespace ra::app
