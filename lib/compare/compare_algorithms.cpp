// Phase of the comparison: which algorithm each run ran, from its op records and its ledger
// (compare_phases.h). An autotuned run may choose other algorithms than the run before it on the
// same machine, so what differs is said per geometry and direction, by groups of runs.
#include <algorithm>
#include <tuple>

#include "compare/compare_phases.h"
#include "trace/op_names.h"

namespace ra::compare::phases {
namespace {

// The ledger entry of a geometry and direction (the last one: a ledger lists each once, and a
// backend whose pins changed appends the newer choice), or null.
const nlohmann::json* ledger_entry(const nlohmann::json& ledger, const std::string& layer,
                                   const std::string& direction) {
  if (!ledger.is_array()) return nullptr;
  const nlohmann::json* found = nullptr;
  for (const nlohmann::json& entry : ledger) {
    if (entry.is_object() && entry.value("layer", "") == layer &&
        entry.value("direction", "") == direction) {
      found = &entry;
    }
  }
  return found;
}

// A group of one run from a ledger entry (what is known of the algorithm besides its name).
AlgorithmGroup group_of_entry(int run, const nlohmann::json& entry) {
  AlgorithmGroup g;
  g.runs = {run};
  g.algorithm = entry.value("algorithm", "");
  if (entry.contains("deterministic") && entry["deterministic"].is_boolean()) {
    g.deterministic = entry["deterministic"].get<bool>();
  }
  g.chosen_by = entry.value("chosen_by", "");
  g.math_type = entry.value("math_type", "");
  if (entry.contains("autotune") && entry["autotune"].is_object()) {
    const nlohmann::json& measured = entry["autotune"];
    if (measured.contains("time_ms") && measured["time_ms"].is_number()) {
      g.autotune_ms.push_back(measured["time_ms"].get<double>());
    }
  }
  return g;
}

}  // namespace

AlgorithmGroup algorithm_at(const trace::Trace& trace, int run, const trace::OpRecord& record) {
  AlgorithmGroup g;
  g.runs = {run};
  if (record.ledger_key.empty()) return g;
  const nlohmann::json* entry =
      ledger_entry(trace.header.ledger, record.ledger_key, trace::ledger_direction(record.op));
  // The ledger speaks for the record only about the algorithm the record names (a CPU run has no
  // ledger; a GPU record and its ledger entry name the same algorithm).
  if (entry != nullptr &&
      (record.algorithm.empty() || entry->value("algorithm", "") == record.algorithm)) {
    g = group_of_entry(run, *entry);
  }
  if (!record.algorithm.empty()) {
    g.algorithm = record.algorithm;
    g.deterministic = record.algorithm_deterministic;
  }
  return g;
}

std::vector<AlgorithmGroup> merge_algorithm_groups(const std::vector<AlgorithmGroup>& singles,
                                                   bool by_chooser) {
  std::vector<AlgorithmGroup> groups;
  for (const AlgorithmGroup& s : singles) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const AlgorithmGroup& g) {
      return g.algorithm == s.algorithm && g.math_type == s.math_type &&
             (!by_chooser || g.chosen_by == s.chosen_by);
    });
    if (same == groups.end()) {
      groups.push_back(s);
      continue;
    }
    same->runs.insert(same->runs.end(), s.runs.begin(), s.runs.end());
    same->autotune_ms.insert(same->autotune_ms.end(), s.autotune_ms.begin(), s.autotune_ms.end());
    if (!same->deterministic) same->deterministic = s.deterministic;
  }
  return groups;
}

std::vector<LedgerDifference> ledger_differences(
    const std::vector<const nlohmann::json*>& ledgers) {
  // Every geometry and direction any ledger lists, in order of first appearance.
  std::vector<std::pair<std::string, std::string>> keys;
  for (const nlohmann::json* ledger : ledgers) {
    if (!ledger->is_array()) continue;
    for (const nlohmann::json& entry : *ledger) {
      if (!entry.is_object()) continue;
      std::pair<std::string, std::string> key{entry.value("layer", ""),
                                              entry.value("direction", "")};
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(std::move(key));
    }
  }
  std::vector<LedgerDifference> out;
  for (const auto& [layer, direction] : keys) {
    std::vector<AlgorithmGroup> singles;
    for (std::size_t i = 0; i < ledgers.size(); ++i) {
      const nlohmann::json* entry = ledger_entry(*ledgers[i], layer, direction);
      AlgorithmGroup g;
      g.runs = {static_cast<int>(i)};
      singles.push_back(entry != nullptr ? group_of_entry(static_cast<int>(i), *entry) : g);
    }
    std::vector<AlgorithmGroup> groups = merge_algorithm_groups(singles, true);
    if (groups.size() > 1) out.push_back(LedgerDifference{layer, direction, std::move(groups)});
  }
  return out;
}

std::optional<std::string> pinned_nondeterministic_warning(
    const std::vector<trace::Trace>& traces) {
  if (traces.empty() || !traces[0].header.ledger.is_array()) return std::nullopt;
  std::string named;
  std::size_t count = 0;
  for (const nlohmann::json& e : traces[0].header.ledger) {
    if (!e.is_object() || e.value("chosen_by", "") != "pinned-file" ||
        e.value("deterministic", true)) {
      continue;
    }
    ++count;
    if (count <= 4) {
      named += (named.empty() ? "" : ", ") + e.value("layer", "") + " " + e.value("direction", "") +
               " " + e.value("algorithm", "");
    }
  }
  if (count == 0) return std::nullopt;
  return std::to_string(count) + " pinned algorithm(s) are not deterministic: " + named +
         (count > 4 ? ", ..." : "") +
         "; pinning fixes which algorithm runs, not the order of its atomic adds: pin a "
         "deterministic one there for identical runs";
}

}  // namespace ra::compare::phases
