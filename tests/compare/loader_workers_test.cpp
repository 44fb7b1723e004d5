// Random streams that data-loader workers share within a run (compare_loader_workers.cpp): found
// per pass over the data, merged over passes and runs; none when the workers' states differ; no
// findings at all when no trace recorded its loader.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "compare/compare_phases.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::trace::LoaderWorker;
using ra::trace::Trace;

// `workers` workers per pass; the dataset's generator in `shared_state` for workers listed in
// `sharing`, its own state for the others; numpy always per worker.
std::vector<LoaderWorker> pass(std::uint64_t base, int workers, const std::vector<int>& sharing) {
  std::vector<LoaderWorker> out;
  for (int w = 0; w < workers; ++w) {
    const bool shares = std::find(sharing.begin(), sharing.end(), w) != sharing.end();
    const std::uint64_t state = shares ? 1 : 100 + static_cast<std::uint64_t>(w);
    out.push_back(
        {base + 7,
         w,
         workers,
         {{"dataset.rng", {state, base}}, {"numpy", {base, static_cast<std::uint64_t>(w)}}}});
  }
  return out;
}

Trace with_workers(int run, const std::vector<std::vector<LoaderWorker>>& passes) {
  Trace t = ra::test::TraceBuilder{}.build(run);
  for (const auto& p : passes)
    t.final->loader_workers.insert(t.final->loader_workers.end(), p.begin(), p.end());
  return t;
}

}  // namespace

TEST_CASE("loader_worker_findings: a generator copied into every worker", "[compare]") {
  const std::vector<Trace> traces = {
      with_workers(0, {pass(10, 4, {0, 1, 2, 3}), pass(20, 4, {0, 1, 2, 3})}),
      with_workers(1, {pass(10, 4, {0, 1, 2, 3}), pass(30, 4, {1, 3})}),
  };
  const auto findings = ra::compare::phases::loader_worker_findings(traces);
  REQUIRE(findings);
  CHECK(findings->runs_recorded == std::vector<int>{0, 1});
  REQUIRE(findings->shared_streams.size() == 1);  // numpy differs per worker: not flagged
  const auto& s = findings->shared_streams[0];
  CHECK(s.stream == "dataset.rng");
  CHECK(s.workers == std::vector<int>{0, 1, 2, 3});
  CHECK(s.runs == std::vector<int>{0, 1});
  CHECK(s.passes == 2);
  CHECK(s.passes_recorded == 2);
}

TEST_CASE("loader_worker_findings: a pass shares only within itself", "[compare]") {
  // Worker 0 of pass A and worker 1 of pass B start alike: different passes, no finding. Within
  // pass B two workers share: only they are named.
  std::vector<LoaderWorker> a = pass(10, 2, {}), b = pass(20, 3, {1, 2});
  b[1].streams[0].second = a[0].streams[0].second;
  b[2].streams[0].second = a[0].streams[0].second;
  const auto findings = ra::compare::phases::loader_worker_findings({with_workers(0, {a, b})});
  REQUIRE(findings);
  REQUIRE(findings->shared_streams.size() == 1);
  CHECK(findings->shared_streams[0].workers == std::vector<int>{1, 2});
  CHECK(findings->shared_streams[0].passes == 1);
  CHECK(findings->shared_streams[0].passes_recorded == 2);
}

TEST_CASE("loader_worker_findings: own streams per worker, and no record at all", "[compare]") {
  const auto fixed = ra::compare::phases::loader_worker_findings(
      {with_workers(0, {pass(10, 4, {})}), ra::test::TraceBuilder{}.build(1)});
  REQUIRE(fixed);
  CHECK(fixed->runs_recorded == std::vector<int>{0});
  CHECK(fixed->shared_streams.empty());
  CHECK_FALSE(ra::compare::phases::loader_worker_findings(
      {ra::test::TraceBuilder{}.build(0), ra::test::TraceBuilder{}.build(1)}));
}
