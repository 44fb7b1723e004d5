#pragma once
// Reports of one audit made two ways (in one process, or by shards and compare) must agree on
// everything but where the traces lie and how long things took: this is that part.
#include <nlohmann/json.hpp>

namespace ra::test {

// The JSON report without the audit folders' provenance (paths, ids, shards, hosts), the runs'
// sources and every timing.
inline nlohmann::json without_paths_and_time(nlohmann::json report) {
  report.erase("audit_folders");
  for (auto& run : report["runs"]) {
    for (const char* key : {"source", "median_step_ms", "total_seconds", "recording_fraction"})
      run.erase(key);
  }
  for (auto& group : report["statistics"]) group.erase("median_step_ms");
  return report;
}

}  // namespace ra::test
