#pragma once
// One shard of an audit (rundir/shard.h): its share of the planned runs, trained into the folder
// the shards share, without a report.
#include "audit/audit_options.h"

namespace ra::audit {

// run_audit with options.shard set (see run_audit).
AuditResult run_audit_shard(const spec::ExperimentSpec& spec, const AuditOptions& options,
                            const AuditProgress& progress);

}  // namespace ra::audit
