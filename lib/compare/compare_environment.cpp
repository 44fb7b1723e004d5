// Phase of the comparison: what differs between the machines and builds of the runs, against run
// 0: environment fingerprint keys, and the divergent runs made elsewhere, the likely explanation
// of their divergence (compare_phases.h).
#include <algorithm>
#include <set>

#include "compare/compare_phases.h"
#include "compare/fingerprint_differences.h"

namespace ra::audit::phases {
namespace {

// Keys that say which machine ran, not what it computes: two nodes of one cluster differ in them
// and still give the same bits.
bool names_machine_only(const std::string& key) {
  return key == "hostname" || key == "logical_cpus" || key == "os";
}

}  // namespace

std::vector<std::string> environment_differences(const std::vector<Trace>& traces) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  const TraceHeader& ref = traces[0].header;
  for (std::size_t i = 1; i < traces.size(); ++i) {
    const TraceHeader& h = traces[i].header;
    for (const std::string& key : fingerprint_differences(ref.environment, h.environment)) {
      const std::string line = key + ": " + ref.environment.value(key, nlohmann::json()).dump() +
                               " (run 0) vs " + h.environment.value(key, nlohmann::json()).dump() +
                               " (run " + std::to_string(i) + ")";
      if (seen.insert(line).second) out.push_back(line);
    }
  }
  return out;
}

std::vector<std::string> numeric_environment_differences(const TraceHeader& a,
                                                         const TraceHeader& b) {
  std::vector<std::string> keys = fingerprint_differences(a.environment, b.environment);
  std::erase_if(keys, names_machine_only);
  return keys;
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
    if (d.environment.empty()) continue;  // the same machine and build: no other machine
    d.ledger = !ledger_differences({&ref.ledger, &h.ledger}).empty();
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ra::audit::phases
