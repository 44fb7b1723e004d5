// Phase of the comparison: what differs between the machines and builds of the runs, against run
// 0: environment fingerprint keys and algorithm ledgers, the likely explanation of a divergence
// (compare_phases.h).
#include <algorithm>
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

std::vector<MachineDifference> divergent_machines(const ComparedRuns& compared,
                                                  const std::vector<std::vector<int>>& classes) {
  std::vector<MachineDifference> out;
  if (compared.ids.empty()) return out;
  const int reference = compared.ids[0];
  const std::vector<int>* reference_class = nullptr;
  for (const std::vector<int>& c : classes) {
    if (std::find(c.begin(), c.end(), reference) != c.end()) reference_class = &c;
  }
  const TraceHeader& ref = compared.traces[0]->header;
  for (std::size_t i = 1; i < compared.ids.size(); ++i) {
    const int run = compared.ids[i];
    if (reference_class &&
        std::find(reference_class->begin(), reference_class->end(), run) != reference_class->end())
      continue;
    const TraceHeader& h = compared.traces[i]->header;
    MachineDifference d;
    d.run = run;
    d.environment = fingerprint_differences(ref.environment, h.environment);
    d.ledger = comparable_ledger(h.ledger) != comparable_ledger(ref.ledger);
    if (!d.environment.empty() || d.ledger) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ra::audit::phases
