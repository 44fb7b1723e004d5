// World size as a configuration (compare/data_parallel.h WorldSizes, docs/distributed.md): runs of
// a 1-process audit and of a 2-process one of the same global batch are compared, rank 0's trace
// standing for a data-parallel run; they may differ, runs of one world size may not.
#include <algorithm>
#include <map>
#include <set>

#include "compare/compare_phases.h"

namespace ra::compare::phases {
namespace {

int world_size_of(const trace::Trace& t) {
  return t.header.distributed ? t.header.distributed->world_size : 1;
}

}  // namespace

std::string other_spec_problem(const std::vector<trace::Trace>& traces, std::size_t i) {
  const trace::Trace& t = traces[i];
  // The specs of exec audits hold their commands, which name the launcher and the process count:
  // a run of another world size than every earlier one of its spec may be of another spec.
  const int world = world_size_of(t);
  for (std::size_t j = 0; j < i; ++j) {
    const trace::Trace& earlier = traces[j];
    if (world_size_of(earlier) != world) continue;
    if (earlier.header.spec_digest == t.header.spec_digest) return "";
    return "traces come from different specs: " + earlier.source + " has spec digest " +
           earlier.header.spec_digest + ", " + t.source + " has " + t.header.spec_digest;
  }
  const bool pytorch = traces[0].header.spec.value("source", "") == "pytorch" &&
                       t.header.spec.value("source", "") == "pytorch";
  if (world != world_size_of(traces[0]) && pytorch) return "";
  if (t.header.spec_digest == traces[0].header.spec_digest) return "";
  return "traces come from different specs: " + traces[0].source + " has spec digest " +
         traces[0].header.spec_digest + ", " + t.source + " has " + t.header.spec_digest;
}

std::optional<WorldSizes> world_sizes(const std::vector<trace::Trace>& traces,
                                      const ComparedRuns& compared,
                                      const std::vector<RunSummary>& runs) {
  WorldSizes w;
  for (const trace::Trace& t : traces) w.of_runs.push_back(world_size_of(t));
  if (std::all_of(w.of_runs.begin(), w.of_runs.end(), [&](int n) { return n == w.of_runs[0]; }))
    return std::nullopt;
  std::map<int, std::set<int>> classes;  // world size -> outcome classes of its compared runs
  for (int id : compared.ids) {
    classes[w.of_runs[static_cast<std::size_t>(id)]].insert(
        runs[static_cast<std::size_t>(id)].outcome_class);
  }
  w.identical_within = std::all_of(classes.begin(), classes.end(),
                                   [](const auto& entry) { return entry.second.size() <= 1; });
  // One spec (an exec audit's spec holds its command, launcher and process count) run at two
  // world sizes: a rank that never came up, not a configuration.
  std::map<std::string, int> world_of_spec;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto [it, added] = world_of_spec.emplace(traces[i].header.spec_digest, w.of_runs[i]);
    if (!added && it->second != w.of_runs[i]) w.configuration = false;
  }
  return w;
}

}  // namespace ra::compare::phases
