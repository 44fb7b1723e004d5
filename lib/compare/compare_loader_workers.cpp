// Random streams that data-loader workers share within a run (compare/compare_phases.h).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "compare/compare_phases.h"

namespace ra::audit::phases {
namespace {

// What one run shows of one stream: the workers that shared it, the passes in which they did.
struct StreamInRun {
  std::set<int> workers;
  std::int64_t passes = 0;
};

// Per stream name, the workers of each pass that started from a state another worker of that
// pass also started from.
std::map<std::string, StreamInRun> shared_in_run(const std::vector<LoaderWorker>& workers,
                                                 std::int64_t& passes) {
  std::map<std::uint64_t, std::vector<const LoaderWorker*>> by_pass;
  for (const LoaderWorker& w : workers) by_pass[w.loader_pass].push_back(&w);
  passes = static_cast<std::int64_t>(by_pass.size());
  std::map<std::string, StreamInRun> shared;
  for (const auto& [pass, in_pass] : by_pass) {
    // (stream, digest words) -> the workers that started from that state.
    std::map<std::tuple<std::string, std::uint64_t, std::uint64_t>, std::vector<int>> holders;
    for (const LoaderWorker* w : in_pass) {
      for (const auto& [name, digest] : w->streams)
        holders[{name, digest.high, digest.low}].push_back(w->worker);
    }
    std::set<std::string> shared_this_pass;
    for (const auto& [key, ids] : holders) {
      if (ids.size() < 2) continue;
      const std::string& name = std::get<0>(key);
      shared[name].workers.insert(ids.begin(), ids.end());
      shared_this_pass.insert(name);
    }
    for (const std::string& name : shared_this_pass) ++shared[name].passes;
  }
  return shared;
}

}  // namespace

std::optional<LoaderWorkerFindings> loader_worker_findings(const std::vector<Trace>& traces) {
  LoaderWorkerFindings findings;
  std::map<std::string, SharedWorkerStream> by_stream;
  std::int64_t most_passes = 0;
  for (const Trace& t : traces) {
    if (!t.final || t.final->loader_workers.empty()) continue;
    const int run = t.header.run_index;
    findings.runs_recorded.push_back(run);
    std::int64_t passes = 0;
    for (const auto& [name, in_run] : shared_in_run(t.final->loader_workers, passes)) {
      SharedWorkerStream& s = by_stream[name];
      s.stream = name;
      for (int w : in_run.workers)
        if (std::find(s.workers.begin(), s.workers.end(), w) == s.workers.end())
          s.workers.push_back(w);
      s.runs.push_back(run);
      s.passes = std::max(s.passes, in_run.passes);
    }
    most_passes = std::max(most_passes, passes);
  }
  if (findings.runs_recorded.empty()) return std::nullopt;
  for (auto& [name, s] : by_stream) {
    std::sort(s.workers.begin(), s.workers.end());
    s.passes_recorded = most_passes;
    findings.shared_streams.push_back(std::move(s));
  }
  return findings;
}

}  // namespace ra::audit::phases
