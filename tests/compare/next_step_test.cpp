// The next step from the evidence (compare_next_step.cpp): PyTorch runs whose batches part are sent
// to the loader (indices=, the sampler's generator, a worker stream that also differs between
// runs), never to --trace-ops, whose op records cannot see into the loader; the engine's batches
// and PyTorch runs with identical batches and differing gradients keep the --trace-ops step.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "compare/finding_facts.h"
#include "core/digest.h"
#include "trace/in_memory_traces.h"
#include "trace/op_window.h"

namespace {

using ra::compare::ComparisonResult;
using ra::trace::LoaderWorker;
using ra::trace::Trace;

Trace pytorch_run(int run) {
  Trace t = ra::test::TraceBuilder{}.build(run);
  t.header.backend = "pytorch-cpu";
  return t;
}

// Two workers of one pass that start from `state` of dataset.rng.
std::vector<LoaderWorker> workers_sharing(std::uint64_t state) {
  return {{7, 0, 2, {{"dataset.rng", {state, 1}}}}, {7, 1, 2, {{"dataset.rng", {state, 1}}}}};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST_CASE("next step: a sample order that differs is the loader's, not an op's", "[compare]") {
  std::vector<Trace> traces = {pytorch_run(0), pytorch_run(1)};
  traces[1].steps[0].batch_indices = ra::test::changed(traces[1].steps[0].batch_indices);
  const ComparisonResult r = ra::compare::compare_traces(traces, {});
  REQUIRE(r.next_step.loader_advice);
  CHECK_FALSE(r.next_step.trace_ops);  // --trace-ops 0:1 could only say "no op is blamed"
  CHECK(r.next_step.loader_advice->step == 0);
  CHECK(r.next_step.loader_advice->tensor == "indices");
  CHECK(r.next_step.loader_advice->indices_recorded);
  const std::string advice = joined(ra::compare::next_step_advice(r));
  CHECK_THAT(advice, Catch::Contains("the batches part at step 0 (their indices)"));
  CHECK_THAT(advice, Catch::Contains("rec.watch_loader(loader)"));  // no workers recorded
  CHECK_THAT(advice, Catch::Contains("generator=torch.Generator().manual_seed(seed)"));
  CHECK_THAT(advice, !Catch::Contains("indices=..."));  // they were recorded
  const nlohmann::json json = ra::compare::to_json(r)["next_step"];
  CHECK(json["kind"] == "watch_loader");
  CHECK(json["trace_ops"].is_null());
  CHECK(json["advice"] == nlohmann::json(ra::compare::next_step_advice(r)));
}

TEST_CASE("next step: a worker stream shared and unseeded is named both ways", "[compare]") {
  std::vector<Trace> traces = {pytorch_run(0), pytorch_run(1)};
  const ra::Digest128 empty = ra::digest(std::span<const std::int64_t>{});
  for (Trace& t : traces)
    for (auto& s : t.steps) s.batch_indices = empty;  // no indices= given
  traces[0].final->loader_workers = workers_sharing(100);
  traces[1].final->loader_workers = workers_sharing(200);  // another state in each run
  traces[1].steps[0].batch_inputs = ra::test::changed(traces[1].steps[0].batch_inputs);
  const ComparisonResult r = ra::compare::compare_traces(traces, {});
  REQUIRE(ra::compare::loader_workers_of(r) != nullptr);
  REQUIRE(ra::compare::loader_workers_of(r)->shared_streams.size() == 1);
  CHECK(ra::compare::loader_workers_of(r)->shared_streams[0].differs_between_runs);
  REQUIRE(r.next_step.loader_advice);
  CHECK(r.next_step.loader_advice->shared_and_differing == std::vector<std::string>{"dataset.rng"});
  const std::string advice = joined(ra::compare::next_step_advice(r));
  CHECK_THAT(advice, Catch::Contains("(their inputs)"));
  CHECK_THAT(advice, Catch::Contains("indices=..."));
  CHECK_THAT(advice, !Catch::Contains("rec.watch_loader(loader)"));  // it was watched
  CHECK_THAT(advice, Catch::Contains("the workers share the stream dataset.rng, and its starting "
                                     "state differs between runs"));
}

TEST_CASE("next step: a shared stream seeded alike in every run is not said to differ",
          "[compare]") {
  std::vector<Trace> traces = {pytorch_run(0), pytorch_run(1)};
  traces[0].final->loader_workers = workers_sharing(100);
  traces[1].final->loader_workers = workers_sharing(100);
  const ComparisonResult r = ra::compare::compare_traces(traces, {});
  REQUIRE(ra::compare::loader_workers_of(r) != nullptr);
  CHECK_FALSE(ra::compare::loader_workers_of(r)->shared_streams[0].differs_between_runs);
  CHECK_FALSE(r.next_step.loader_advice);  // identical runs: no next step at all
  CHECK(ra::compare::next_step_advice(r).empty());
}

TEST_CASE("next step: identical batches, differing gradients: --trace-ops", "[compare]") {
  std::vector<Trace> traces = {pytorch_run(0), pytorch_run(1)};
  ra::test::diverge(traces[1], 1, 2);
  const ComparisonResult r = ra::compare::compare_traces(traces, {});
  CHECK_FALSE(r.next_step.loader_advice);
  REQUIRE(r.next_step.trace_ops);
  CHECK(ra::trace::to_string(*r.next_step.trace_ops) == "1:2");
  CHECK(ra::compare::to_json(r)["next_step"]["kind"] == "trace_ops");
  // The engine's batches are its own data stream, which its op records do see.
  std::vector<Trace> engine = {ra::test::TraceBuilder{}.build(0),
                               ra::test::TraceBuilder{}.build(1)};
  engine[1].steps[0].batch_inputs = ra::test::changed(engine[1].steps[0].batch_inputs);
  const ComparisonResult e = ra::compare::compare_traces(engine, {});
  CHECK_FALSE(e.next_step.loader_advice);
  CHECK(e.next_step.trace_ops);
}

TEST_CASE("next step: the re-run command and the ranks are inputs, never patches", "[compare]") {
  // Issue 60: run and exec set the command, and the audit the ranks' findings, on the finished
  // result. Both are options of the comparison now, and it decides the next step once.
  std::vector<Trace> traces = {pytorch_run(0), pytorch_run(1)};
  ra::test::diverge(traces[1], 1, 2);
  ra::compare::ComparisonOptions options;
  std::vector<std::string> asked;
  options.rerun_command = [&asked](const std::string& window, bool tensor_digests) {
    asked.push_back(window + (tensor_digests ? " +digests" : ""));
    return "repro-audit exec --trace-ops " + window + " -- python3 train.py";
  };
  const ComparisonResult r = ra::compare::compare_traces(traces, options);
  CHECK(asked == std::vector<std::string>{"1:2"});
  CHECK(r.next_step.command == "repro-audit exec --trace-ops 1:2 -- python3 train.py");
  // A collective that is the cause leaves no op of a rank to localise: no re-run is asked for.
  options.distributed = [](const std::vector<Trace>&) {
    ra::compare::DistributedFindings f;
    f.world_size = 2;
    f.collective = ra::compare::CollectiveDivergence{};
    f.collective->inputs_identical = true;
    return std::optional<ra::compare::DistributedFindings>(f);
  };
  asked.clear();
  const ComparisonResult c = ra::compare::compare_traces(traces, options);
  REQUIRE(ra::compare::distributed_of(c) != nullptr);
  CHECK_FALSE(c.next_step.trace_ops);
  CHECK(c.next_step.command.empty());
  CHECK(asked.empty());
}
