// Phase of the comparison: what differs between the machines and builds of the runs, against run
// 0: environment fingerprint keys and algorithm ledgers, the likely explanation of a divergence
// (compare_phases.h).
#include <set>

#include "audit/compare_phases.h"
#include "audit/environment.h"

namespace ra::audit::phases {
namespace {

// The ledger without what is measured anew in every run: the time cudnnFind took for an
// autotuned algorithm (its "autotune.time_ms"). Which algorithm ran, its math type and workspace
// are compared; a different time alone is no difference between the runs' algorithms.
nlohmann::json comparable_ledger(nlohmann::json ledger) {
  if (!ledger.is_array()) return ledger;
  for (nlohmann::json& entry : ledger) {
    if (entry.is_object() && entry.contains("autotune") && entry["autotune"].is_object()) {
      entry["autotune"].erase("time_ms");
    }
  }
  return ledger;
}

}  // namespace

TraceDifferences environment_differences(const std::vector<Trace>& traces) {
  TraceDifferences out;
  std::set<std::string> seen;
  const TraceHeader& ref = traces[0].header;
  const nlohmann::json ref_ledger = comparable_ledger(ref.ledger);  // once, not per run
  for (std::size_t i = 1; i < traces.size(); ++i) {
    const TraceHeader& h = traces[i].header;
    for (const std::string& key : fingerprint_differences(ref.environment, h.environment)) {
      const std::string line = key + ": " + ref.environment.value(key, nlohmann::json()).dump() +
                               " (run 0) vs " + h.environment.value(key, nlohmann::json()).dump() +
                               " (run " + std::to_string(i) + ")";
      if (seen.insert(line).second) out.environment.push_back(line);
    }
    if (comparable_ledger(h.ledger) != ref_ledger) {
      out.ledger.push_back("run " + std::to_string(i) + ": " + h.ledger.dump() +
                           " vs run 0: " + ref.ledger.dump());
    }
  }
  return out;
}

}  // namespace ra::audit::phases
