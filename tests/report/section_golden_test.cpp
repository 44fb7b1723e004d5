// Golden tests of the sections that became findings (issue 60): resumes, world sizes and the
// data-parallel ranks, replicas and collective, a loader's workers, each rendered in every form
// (text, JSON, JUnit, HTML) from comparisons of traces built in memory, byte for byte against
// tests/report/golden/. They were written before those sections moved onto the registry of checks,
// so that the move is seen to change no byte (REPRO_AUDIT_UPDATE_GOLDEN=1 rewrites them:
// docs/report.md).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/readers_agree.h"
#include "report/report_cases.h"
#include "report/sections.h"
#include "report/text_report.h"
#include "support/golden.h"
#include "trace/in_memory_traces.h"

namespace {

using namespace ra::compare;
using ra::test::check_golden;
using ra::test::exec_run;
using ra::test::resume_point;
using ra::test::resumed_runs;
using ra::trace::ResumePoint;
using ra::trace::Trace;

void check_forms(const std::string& name, const ComparisonResult& result) {
  ra::test::check_golden_forms(name, result, true);
}

// A data-parallel audit's findings as the audit folder's rank traces give them.
DistributedFindings two_ranks(bool rank_parts, bool replicas_part) {
  DistributedFindings f;
  f.world_size = 2;
  f.backend = "gloo";
  f.comm_hook = "default";
  f.runs_checked = 2;
  Divergence d;
  d.category = Category::gradients;
  d.step = 1;
  d.tensor = "fc.weight";
  d.runs_differing = {1};
  f.ranks = {{1, !rank_parts, rank_parts ? std::optional<Divergence>(d) : std::nullopt}};
  if (rank_parts)
    f.collective = CollectiveDivergence{1, 1, 0, {"fc.weight", "fc.bias"}, 12, 0, true, "default"};
  if (replicas_part) f.replicas_parted = ReplicaDivergence{1, 2, "fc.bias", 1};
  f.bucket_layout = BucketLayoutDifference{1, 1, 1, "bucket 0 holds fc.bias before fc.weight"};
  return f;
}

ComparisonResult data_parallel(bool rank_parts, bool replicas_part, bool expect_identical) {
  std::vector<Trace> runs{exec_run(0, 2, 'a'), exec_run(1, 2, 'a')};
  if (rank_parts) ra::test::diverge(runs[1], 1, 1);
  ComparisonOptions options;
  options.expect_identical = expect_identical;
  options.distributed = [=](const std::vector<Trace>&) {
    return std::optional<DistributedFindings>(two_ranks(rank_parts, replicas_part));
  };
  return compare_traces(runs, options);
}

// Two workers of one pass that start from `state` of dataset.rng.
std::vector<ra::trace::LoaderWorker> workers_sharing(std::uint64_t state) {
  return {{7, 0, 2, {{"dataset.rng", {state, 1}}}}, {7, 1, 2, {{"dataset.rng", {state, 1}}}}};
}

// Two PyTorch runs whose loader's workers share a stream seeded `state0` and `state1`; with
// `batches_part`, run 1's first batch differs (the loader's advice follows).
ComparisonResult loader_runs(std::uint64_t state0, std::uint64_t state1, bool batches_part) {
  std::vector<Trace> traces{ra::test::TraceBuilder{}.build(0), ra::test::TraceBuilder{}.build(1)};
  for (Trace& t : traces) t.header.backend = "pytorch-cpu";
  traces[0].final->loader_workers = workers_sharing(state0);
  traces[1].final->loader_workers = workers_sharing(state1);
  if (batches_part)
    traces[1].steps[0].batch_inputs = ra::test::changed(traces[1].steps[0].batch_inputs);
  return compare_traces(traces, {});
}

}  // namespace

TEST_CASE("section golden: the instability finding of three seed groups", "[report][golden]") {
  check_forms("instability", ra::test::three_groups());
}

TEST_CASE("section golden: a perturbed run whose start differs elsewhere too, no predictions",
          "[report][golden]") {
  check_forms("instability_start_differs", ra::test::three_groups("cpu", false, true));
}

TEST_CASE("section golden: loader workers that share an unseeded stream, batches part",
          "[report][golden]") {
  check_forms("loader_workers_unseeded", loader_runs(100, 200, true));
}

TEST_CASE("section golden: loader workers that share a stream seeded alike", "[report][golden]") {
  check_forms("loader_workers_shared", loader_runs(100, 100, false));
}

TEST_CASE("section golden: a resume that left torch's RNG state out", "[report][golden]") {
  ResumePoint resumed = resume_point(2, true);
  resumed.state.rng_streams[0].second = ra::test::changed(resumed.state.rng_streams[0].second);
  check_forms("resume_not_exact",
              compare_traces(resumed_runs(resumed), ra::test::expect_identity()));
}

TEST_CASE("section golden: a resume whose batch differs, allowed under --expect any",
          "[report][golden]") {
  ResumePoint resumed = resume_point(2, true);
  resumed.state.next_batch = ra::test::changed(resumed.state.next_batch);
  ComparisonOptions options;
  options.expect_identical = false;
  check_forms("resume_allowed", compare_traces(resumed_runs(resumed), options));
}

TEST_CASE("section golden: an exact resume after which the run parts", "[report][golden]") {
  std::vector<Trace> traces = resumed_runs(resume_point(2, true));
  for (ra::trace::StepRecord& s : traces[1].steps) {
    if (s.step < 2) continue;
    for (auto& w : s.weights) w = ra::test::changed(w);
  }
  traces[1].final->weights = traces[1].steps.back().weights;
  check_forms("resume_parted", compare_traces(traces, ra::test::expect_identity()));
}

TEST_CASE("section golden: data-parallel ranks that part at the collective", "[report][golden]") {
  check_forms("data_parallel_rank", data_parallel(true, false, true));
}

TEST_CASE("section golden: replicas that part, identity not expected", "[report][golden]") {
  check_forms("data_parallel_replicas", data_parallel(false, true, false));
}

TEST_CASE("section golden: one command's runs of two world sizes", "[report][golden]") {
  std::vector<Trace> runs{exec_run(0, 2, 'a'), exec_run(1, 1, 'a')};
  ra::test::diverge(runs[1], 0, 0);
  check_forms("world_sizes_differ", compare_traces(runs, ra::test::expect_identity()));
}

TEST_CASE("section golden: world sizes as a configuration", "[report][golden]") {
  std::vector<Trace> runs{exec_run(0, 1, 'a'), exec_run(1, 2, 'b')};
  ra::test::diverge(runs[1], 2, 1);
  check_forms("world_sizes_configuration", compare_traces(runs, ra::test::expect_identity()));
}

// Three runs whose spine gathered a warning of each kind before the warnings were a finding (a
// copy of one run, determinism switches that differ, a recorder's warning), two of them with
// --cuda-graphs launches (run 0 and its copy).
TEST_CASE("section golden: warnings of each kind and the steps' CUDA graph launches",
          "[report][golden]") {
  std::vector<Trace> traces{ra::test::TraceBuilder{}.build(0), ra::test::TraceBuilder{}.build(1)};
  for (std::size_t i = 0; i < traces.size(); ++i) {
    traces[i].header.environment["deterministic_algorithms"] = i != 1;
    traces[i].header.environment["cudnn_deterministic"] = true;
    traces[i].header.environment["cudnn_benchmark"] = false;
    traces[i].header.environment["cublas_workspace_config"] = ":4096:8";
  }
  traces[1].header.recorder_warnings = {"rec.step() at step 0 found the weights unchanged"};
  ra::trace::StepLaunchRecord launches;
  launches.eager = 2;
  launches.capture = 1;
  launches.replay = 1;
  launches.eager_reasons = {{"the first step warms up", 1}, {"an epoch's last batch", 1}};
  traces[0].final->step_launch = launches;
  traces.push_back(traces[0]);  // run 0 given twice
  check_forms("warnings_and_launches", compare_traces(traces, {}));
}
