// Random streams that data-loader workers share within a run (compare/compare_phases.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "compare/compare_phases.h"

namespace ra::compare::phases {
namespace {

// What one run shows of one stream: the workers that shared it, the passes in which they did.
struct StreamInRun {
  std::set<int> workers;
  std::int64_t passes = 0;
};

// Per stream name, the workers of each pass that started from a state another worker of that
// pass also started from.
std::map<std::string, StreamInRun> shared_in_run(const std::vector<trace::LoaderWorker>& workers,
                                                 std::int64_t& passes) {
  std::map<std::uint64_t, std::vector<const trace::LoaderWorker*>> by_pass;
  for (const trace::LoaderWorker& w : workers) by_pass[w.loader_pass].push_back(&w);
  passes = static_cast<std::int64_t>(by_pass.size());
  std::map<std::string, StreamInRun> shared;
  for (const auto& [pass, in_pass] : by_pass) {
    // (stream, digest words) -> the workers that started from that state.
    std::map<std::tuple<std::string, std::uint64_t, std::uint64_t>, std::vector<int>> holders;
    for (const trace::LoaderWorker* w : in_pass) {
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

// The state `stream` started from in worker 0 of a run's first recorded pass (workers may start
// in any order; a stream seeded per worker differs between workers, not between runs), or none.
std::optional<Digest128> first_state(const std::vector<trace::LoaderWorker>& workers,
                                     const std::string& stream) {
  if (workers.empty()) return std::nullopt;
  for (const trace::LoaderWorker& w : workers) {
    if (w.loader_pass != workers.front().loader_pass || w.worker != 0) continue;
    for (const auto& [name, digest] : w.streams)
      if (name == stream) return digest;
  }
  return std::nullopt;
}

// Whether `stream`'s starting state differs between the same-seed runs that recorded their
// loader's workers: a stream not seeded from the run's seed.
bool differs_between_runs(const std::vector<trace::Trace>& traces, const std::string& stream) {
  std::optional<Digest128> seen;
  for (const trace::Trace& t : traces) {
    if (!t.final || t.header.seed_group == "different") continue;
    const std::optional<Digest128> state = first_state(t.final->loader_workers, stream);
    if (!state) continue;
    if (seen && *seen != *state) return true;
    seen = state;
  }
  return false;
}

}  // namespace

std::optional<LoaderWorkerFindings> loader_worker_findings(
    const std::vector<trace::Trace>& traces) {
  LoaderWorkerFindings findings;
  std::map<std::string, SharedWorkerStream> by_stream;
  std::int64_t most_passes = 0;
  for (const trace::Trace& t : traces) {
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
    s.differs_between_runs = differs_between_runs(traces, name);
    findings.shared_streams.push_back(std::move(s));
  }
  return findings;
}

}  // namespace ra::compare::phases
