// Phase of the comparison: what differs between the machines and builds of the runs, against run
// 0: environment fingerprint keys, and the divergent runs made elsewhere, the likely explanation
// of their divergence (compare_phases.h).
#include <algorithm>
#include <set>

#include "compare/compare_phases.h"
#include "compare/fingerprint_differences.h"

namespace ra::compare::phases {
namespace {

// Keys that say which machine ran, not what it computes: two nodes of one cluster differ in them
// and still give the same bits.
bool names_machine_only(const std::string& key) {
  return key == "hostname" || key == "logical_cpus" || key == "os";
}

// The switches a framework offers for determinism, as the PyTorch recorder names them
// (lib/python/repro_audit/recorder.py).
constexpr const char* kDeterminismFlags[] = {"deterministic_algorithms", "cudnn_deterministic",
                                             "cudnn_benchmark", "cublas_workspace_config"};

// "false (runs 0,2), true (run 1)": each value of `key` once, with the runs that had it.
std::string values_by_run(const std::vector<trace::Trace>& traces, const std::string& key) {
  std::vector<std::pair<std::string, std::vector<int>>> values;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const std::string v = traces[i].header.environment.value(key, nlohmann::json()).dump();
    auto it =
        std::find_if(values.begin(), values.end(), [&](const auto& e) { return e.first == v; });
    if (it == values.end()) it = values.insert(values.end(), {v, {}});
    it->second.push_back(static_cast<int>(i));
  }
  std::string out;
  for (const auto& [value, runs] : values) {
    out += (out.empty() ? "" : ", ") + value + (runs.size() > 1 ? " (runs " : " (run ");
    for (std::size_t j = 0; j < runs.size() && j < 10; ++j)
      out += (j ? "," : "") + std::to_string(runs[j]);
    out += runs.size() > 10 ? ",...)" : ")";
  }
  return out;
}

}  // namespace

std::optional<std::string> determinism_flags_warning(const std::vector<trace::Trace>& traces) {
  // Only between runs of a framework that has the switches: a trace without them (the engine's,
  // in a cross-check) is another implementation, which the environment differences name.
  const auto has_switches = [](const trace::Trace& t) {
    return t.header.environment.is_object() && t.header.environment.contains(kDeterminismFlags[0]);
  };
  if (!std::all_of(traces.begin(), traces.end(), has_switches)) return std::nullopt;
  std::string differing;
  for (const char* key : kDeterminismFlags) {
    const nlohmann::json first = traces[0].header.environment.value(key, nlohmann::json());
    const bool differs = std::any_of(traces.begin(), traces.end(), [&](const trace::Trace& t) {
      return t.header.environment.value(key, nlohmann::json()) != first;
    });
    if (differs)
      differing +=
          std::string(differing.empty() ? "" : "; ") + key + ": " + values_by_run(traces, key);
  }
  if (differing.empty()) return std::nullopt;
  return "the runs did not set the determinism switches alike (" + differing +
         "): they are different configurations, not repeats of one; set the switches once, "
         "before the model is built";
}

std::vector<std::string> environment_differences(const std::vector<trace::Trace>& traces) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  const trace::TraceHeader& ref = traces[0].header;
  for (std::size_t i = 1; i < traces.size(); ++i) {
    const trace::TraceHeader& h = traces[i].header;
    for (const std::string& key : fingerprint_differences(ref.environment, h.environment)) {
      const std::string line = key + ": " + ref.environment.value(key, nlohmann::json()).dump() +
                               " (run 0) vs " + h.environment.value(key, nlohmann::json()).dump() +
                               " (run " + std::to_string(i) + ")";
      if (seen.insert(line).second) out.push_back(line);
    }
  }
  return out;
}

std::vector<std::string> numeric_environment_differences(const trace::TraceHeader& a,
                                                         const trace::TraceHeader& b) {
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
  const trace::TraceHeader& ref = compared.traces[0]->header;
  for (std::size_t i = 1; i < compared.ids.size(); ++i) {
    const int run = compared.ids[i];
    if (reference_class &&
        std::find(reference_class->begin(), reference_class->end(), run) != reference_class->end())
      continue;
    const trace::TraceHeader& h = compared.traces[i]->header;
    MachineDifference d;
    d.run = run;
    d.environment = fingerprint_differences(ref.environment, h.environment);
    if (d.environment.empty()) continue;  // the same machine and build: no other machine
    d.ledger = !ledger_differences({&ref.ledger, &h.ledger}).empty();
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ra::compare::phases
