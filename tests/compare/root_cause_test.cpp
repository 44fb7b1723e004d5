// The root-cause phase (compare_root_cause.cpp) on traces built in memory: each kind of cause,
// the chain, the grouping of runs, the algorithm named from the ledger. (Op records through the
// trace file: tests/audit/engine_op_records_test.cpp; op windows: tests/trace/op_window_test.cpp.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare.h"
#include "compare/finding_facts.h"
#include "compare/ledger_entries.h"
#include "trace/in_memory_traces.h"
#include "trace/op_window.h"

using Catch::Matchers::Contains;

namespace {

using ra::Digest128;
using ra::compare::RootCause;
using ra::trace::OpRecord;
using ra::trace::Trace;

Digest128 d(std::uint64_t what, std::int64_t step, std::size_t i) {
  return ra::test::made_up_digest(100 + what, step, i);
}

// Four records per step: batch -> conv2d.forward -> conv2d.backward_filter -> optimizer.update,
// each reading the one before.
std::vector<OpRecord> step_ops(std::int64_t step) {
  std::vector<OpRecord> ops(4);
  ops[0] = {"batch", "", "", "", {}, {d(1, step, 0), d(1, step, 1), d(1, step, 2)}};
  ops[1] = {
      "conv2d.forward", "conv2d_0", "", "conv 8x1x6x6 k2 3x3 s1 p0", {d(1, step, 1), d(2, step, 0)},
      {d(3, step, 0)}};
  ops[2] = {"conv2d.backward_filter",
            "conv2d_0",
            "nondeterministic",
            "conv 8x1x6x6 k2 3x3 s1 p0",
            {d(1, step, 1), d(3, step, 0)},
            {d(4, step, 0)}};
  ops[3] = {"optimizer.update", "conv2d_0.weight", "", "", {d(2, step, 0), d(4, step, 0)},
            {d(2, step + 1, 0)}};
  return ops;
}

std::vector<Trace> traced_runs(int runs, int steps = 4) {
  ra::test::TraceBuilder b;
  b.steps = steps;
  std::vector<Trace> out;
  for (int r = 0; r < runs; ++r) {
    Trace t = b.build(r);
    t.header.format_version = 2;
    t.header.trace_ops = ra::trace::OpWindow{};
    for (auto& s : t.steps) {
      s.ops_recorded = true;
      s.ops = step_ops(s.step);
    }
    out.push_back(std::move(t));
  }
  return out;
}

using ra::test::changed;

// What a differing backward filter output at `step` does: its output, the update reading it, and
// the step's gradients and weights differ.
void differ_at_filter(Trace& t, std::int64_t step) {
  auto& ops = t.steps[step].ops;
  ops[2].out[0] = changed(ops[2].out[0]);
  ops[3].in[1] = ops[2].out[0];
  ops[3].out[0] = changed(ops[3].out[0]);
  ra::test::diverge(t, step, 0);
}

ra::compare::ComparisonResult compare(const std::vector<Trace>& traces) {
  ra::compare::ComparisonOptions o;
  o.expect_identical = false;
  return ra::compare::compare_traces(traces, o);
}

}  // namespace

TEST_CASE("an op whose inputs match and output differs is the root cause", "[audit][ops]") {
  auto traces = traced_runs(3);
  differ_at_filter(traces[1], 2);
  differ_at_filter(traces[2], 2);
  traces[1].header.ledger = nlohmann::json::array(
      {{{"layer", "conv 8x1x6x6 k2 3x3 s1 p0"}, {"direction", "forward"}, {"algorithm", "FWD_0"}},
       {{"layer", "conv 8x1x6x6 k2 3x3 s1 p0"},
        {"direction", "backward_filter"},
        {"algorithm", "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0"},
        {"deterministic", false}}});
  const auto r = compare(traces);
  REQUIRE(r.root_cause.ops_traced);
  REQUIRE(r.root_cause.causes.size() == 1);  // runs 1 and 2 share it
  const RootCause& c = r.root_cause.causes[0];
  CHECK(c.kind == RootCause::Kind::op);
  CHECK(c.step == 2);
  CHECK(c.epoch == 1);
  CHECK(c.batch == 0);
  CHECK(c.index == 2);
  CHECK(c.record.op == "conv2d.backward_filter");
  CHECK(c.record.mode == "nondeterministic");
  CHECK(c.differing_inputs.empty());
  CHECK(c.differing_outputs == std::vector<std::size_t>{0});
  CHECK(c.algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0");
  CHECK(c.algorithm_deterministic == false);
  REQUIRE(c.chain.size() == 1);
  CHECK(c.chain[0].op == "optimizer.update");
  CHECK(c.chain[0].index == 3);
  CHECK_FALSE(c.chain[0].inputs_identical);  // it read the differing gradient
  CHECK(c.step_records == 4);
  CHECK(c.runs == std::vector<int>{1, 2});
}

TEST_CASE("a loss's root cause names the batch-sum kernel of the ledger", "[audit][ops]") {
  auto traces = traced_runs(2);
  for (auto& t : traces) {
    for (auto& s : t.steps) {
      s.ops.insert(s.ops.begin() + 2, OpRecord{"softmax_cross_entropy",
                                               "loss",
                                               "nondeterministic",
                                               "softmax_cross_entropy 8x10",
                                               {d(3, s.step, 0), d(9, s.step, 0)},
                                               {d(5, s.step, 0), d(6, s.step, 0)}});
    }
  }
  traces[1].steps[0].ops[2].out[0] = changed(traces[1].steps[0].ops[2].out[0]);
  ra::test::diverge(traces[1], 0, 0);
  traces[1].header.ledger = nlohmann::json::array(
      {{{"layer", "softmax_cross_entropy 8x10"},
        {"direction", "batch_sum"},
        {"algorithm", "ra::kernels::softmax_cross_entropy (atomic, 4 slices)"},
        {"deterministic", false}}});
  const auto r = compare(traces);
  REQUIRE(r.root_cause.causes.size() == 1);
  CHECK(r.root_cause.causes[0].record.op == "softmax_cross_entropy");
  CHECK(r.root_cause.causes[0].algorithm ==
        "ra::kernels::softmax_cross_entropy (atomic, 4 slices)");
  CHECK(r.root_cause.causes[0].differing_outputs == std::vector<std::size_t>{0});
}

TEST_CASE("runs with different causes are listed earliest first", "[audit][ops]") {
  auto traces = traced_runs(3);
  differ_at_filter(traces[1], 3);
  // Run 2: the conv forward differs at step 1.
  auto& ops = traces[2].steps[1].ops;
  ops[1].out[0] = changed(ops[1].out[0]);
  ops[2].in[1] = ops[1].out[0];
  ra::test::diverge(traces[2], 1, 0);
  const auto r = compare(traces);
  REQUIRE(r.root_cause.causes.size() == 2);
  CHECK(r.root_cause.causes[0].step == 1);
  CHECK(r.root_cause.causes[0].record.op == "conv2d.forward");
  CHECK(r.root_cause.causes[0].runs == std::vector<int>{2});
  CHECK(r.root_cause.causes[1].step == 3);
  CHECK(r.root_cause.causes[1].runs == std::vector<int>{1});
}

TEST_CASE("a differing input with every earlier output the same blames no op", "[audit][ops]") {
  auto traces = traced_runs(2);
  // The weight read by the forward differs: nothing recorded before it produced that.
  auto& ops = traces[1].steps[2].ops;
  ops[1].in[1] = changed(ops[1].in[1]);
  ops[1].out[0] = changed(ops[1].out[0]);
  ra::test::diverge(traces[1], 2, 0);
  const auto r = compare(traces);
  REQUIRE(r.root_cause.causes.size() == 1);
  const RootCause& c = r.root_cause.causes[0];
  CHECK(c.kind == RootCause::Kind::outside_ops);
  CHECK(c.step == 2);
  CHECK(c.index == 1);
  CHECK(c.differing_inputs == std::vector<std::size_t>{1});
  CHECK(c.differing_outputs == std::vector<std::size_t>{0});
}

TEST_CASE("runs that executed other ops are reported as such", "[audit][ops]") {
  SECTION("another op at the same place") {
    auto traces = traced_runs(2);
    traces[1].steps[1].ops[2].op = "conv2d.backward_data";
    const auto r = compare(traces);
    REQUIRE(r.root_cause.causes.size() == 1);
    CHECK(r.root_cause.causes[0].kind == RootCause::Kind::op_sequence);
    CHECK(r.root_cause.causes[0].index == 2);
    CHECK_THAT(r.root_cause.causes[0].detail, Contains("conv2d.backward_data"));
  }
  SECTION("another kernel mode") {
    auto traces = traced_runs(2);
    traces[1].steps[0].ops[2].mode = "deterministic";
    const auto r = compare(traces);
    REQUIRE(r.root_cause.causes.size() == 1);
    CHECK(r.root_cause.causes[0].kind == RootCause::Kind::op_sequence);
    CHECK_THAT(r.root_cause.causes[0].detail, Contains("mode 'deterministic'"));
  }
  SECTION("an op more") {
    auto traces = traced_runs(2);
    traces[1].steps[3].ops.push_back(traces[1].steps[3].ops.back());
    const auto r = compare(traces);
    REQUIRE(r.root_cause.causes.size() == 1);
    CHECK(r.root_cause.causes[0].kind == RootCause::Kind::op_sequence);
    CHECK(r.root_cause.causes[0].step == 3);
    CHECK_THAT(r.root_cause.causes[0].detail, Contains("4 ops in the step, this run 5"));
  }
}

TEST_CASE("a divergence before the window or in the initial weights is not pinned on an op",
          "[audit][ops]") {
  SECTION("before the window") {
    auto traces = traced_runs(2);
    for (auto& t : traces) {
      t.header.trace_ops = ra::trace::OpWindow{2, std::nullopt};
      for (int s = 0; s < 2; ++s) {
        t.steps[s].ops_recorded = false;
        t.steps[s].ops.clear();
      }
    }
    ra::test::diverge(traces[1], 1, 0);
    const auto r = compare(traces);
    REQUIRE(r.root_cause.causes.size() == 1);
    CHECK(r.root_cause.causes[0].kind == RootCause::Kind::outside_window);
    CHECK(r.root_cause.causes[0].step == 1);
    CHECK_THAT(r.root_cause.causes[0].detail, Contains("no op records"));
    CHECK(ra::trace::to_string(*r.root_cause.op_window) == "2:");
  }
  SECTION("initial weights") {
    auto traces = traced_runs(2);
    traces[1].initial_weights[0] = changed(traces[1].initial_weights[0]);
    const auto r = compare(traces);
    REQUIRE(r.root_cause.causes.size() == 1);
    CHECK(r.root_cause.causes[0].kind == RootCause::Kind::outside_ops);
    CHECK(r.root_cause.causes[0].step == -1);
  }
  SECTION("identical runs have none") {
    const auto r = compare(traced_runs(3));
    CHECK(r.root_cause.ops_traced);
    CHECK(r.root_cause.causes.empty());
  }
}

namespace {

nlohmann::json filter_entry(const std::string& algorithm, bool deterministic, double ms) {
  return autotuned("conv 8x1x6x6 k2 3x3 s1 p0", "backward_filter", algorithm, ms, deterministic);
}

}  // namespace

TEST_CASE("root-cause classes: algorithm choice apart from a kernel's own nondeterminism",
          "[audit][ops]") {
  // Run 1 autotuned another algorithm for the filter gradient; run 2 ran run 0's atomic one and
  // got other bits from it: two causes at one op, each worded for what it is.
  auto traces = traced_runs(3);
  traces[0].header.ledger =
      nlohmann::json::array({filter_entry("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0", false, 0.07)});
  traces[1].header.ledger =
      nlohmann::json::array({filter_entry("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT", true, 0.06)});
  traces[2].header.ledger =
      nlohmann::json::array({filter_entry("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0", false, 0.08)});
  differ_at_filter(traces[1], 1);
  differ_at_filter(traces[2], 1);
  const auto r = compare(traces);
  REQUIRE(r.root_cause.causes.size() == 2);
  const RootCause& choice = r.root_cause.causes[0];
  CHECK(choice.cause == RootCause::Class::algorithm_choice);
  CHECK(choice.runs == std::vector<int>{1});
  REQUIRE(choice.algorithms.size() == 2);
  CHECK(choice.algorithms[0].runs == std::vector<int>{0});
  CHECK(choice.algorithms[0].algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0");
  CHECK(choice.algorithms[0].deterministic == false);
  CHECK(choice.algorithms[0].chosen_by == "autotuned");
  CHECK(choice.algorithms[0].autotune_ms == std::vector<double>{0.07});
  CHECK(choice.algorithms[1].runs == std::vector<int>{1});
  CHECK(choice.algorithms[1].algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT");
  const RootCause& race = r.root_cause.causes[1];
  CHECK(race.cause == RootCause::Class::nondeterministic_kernel);
  CHECK(race.runs == std::vector<int>{2});
  REQUIRE(race.algorithms.size() == 1);
  CHECK(race.algorithms[0].runs == std::vector<int>{0, 2});
  CHECK(race.algorithms[0].autotune_ms == std::vector<double>{0.07, 0.08});
  // The ledgers' difference is one geometry and direction, by run group.
  REQUIRE(ra::compare::environment_of(r).ledger.size() == 1);
  CHECK(ra::compare::environment_of(r).ledger[0].groups.size() == 2);
  CHECK(ra::compare::environment_of(r).ledger[0].groups[0].runs == std::vector<int>{0, 2});
  // Same machine, same build: no run "ran on another machine".
  CHECK(r.divergent_machines.empty());
  const nlohmann::json j = to_json(r);
  CHECK(j["root_causes"][0]["cause"] == "algorithm_choice");
  CHECK(j["root_causes"][0]["algorithms"][1]["algorithm"] ==
        "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT");
  CHECK(j["root_causes"][1]["cause"] == "nondeterministic_kernel");
}

TEST_CASE("root-cause classes: the algorithm an op record names wins over the ledger",
          "[audit][ops]") {
  // CPU runs have no ledger: their op records name the kernel. Two runs with one kernel, one of
  // them racing.
  auto traces = traced_runs(2);
  for (auto& t : traces) {
    for (auto& s : t.steps) {
      s.ops[2].algorithm = "cpu avx2-fma, per-thread partials added in completion order";
      s.ops[2].algorithm_deterministic = false;
    }
  }
  differ_at_filter(traces[1], 2);
  const auto r = compare(traces);
  REQUIRE(r.root_cause.causes.size() == 1);
  CHECK(r.root_cause.causes[0].cause == RootCause::Class::nondeterministic_kernel);
  REQUIRE(r.root_cause.causes[0].algorithms.size() == 1);
  CHECK(r.root_cause.causes[0].algorithms[0].algorithm ==
        "cpu avx2-fma, per-thread partials added in completion order");
  CHECK(r.root_cause.causes[0].algorithms[0].deterministic == false);
  CHECK(r.root_cause.causes[0].algorithms[0].chosen_by.empty());
  // Another algorithm on identical inputs, named by the records alone: an algorithm choice.
  for (auto& s : traces[1].steps) s.ops[2].algorithm = "cpu portable, fixed reduction tree";
  CHECK(compare(traces).root_cause.causes[0].cause == RootCause::Class::algorithm_choice);
}

TEST_CASE("root-cause classes: an injected fault and another machine", "[audit][ops]") {
  auto traces = traced_runs(3);
  differ_at_filter(traces[1], 1);
  differ_at_filter(traces[2], 1);
  traces[1].header.fault = {{"run", 1},
                            {"step", 1},
                            {"op", "conv2d_0/conv2d.backward_filter"},
                            {"element", 0},
                            {"bit", 3}};
  traces[2].header.environment["cpu_gemm_kernel"] = "portable";
  traces[2].header.environment["hostname"] = "host-b";
  const auto r = compare(traces);
  REQUIRE(r.root_cause.causes.size() == 2);
  CHECK(r.root_cause.causes[0].cause == RootCause::Class::fault);
  CHECK(r.root_cause.causes[0].runs == std::vector<int>{1});
  CHECK(r.root_cause.causes[1].cause == RootCause::Class::environment);
  CHECK(r.root_cause.causes[1].runs == std::vector<int>{2});
  // The host alone computes nothing differently; the kernel's instruction set does.
  CHECK(r.root_cause.causes[1].environment_keys == std::vector<std::string>{"cpu_gemm_kernel"});
  // A fault at another step names no op here.
  traces[1].header.fault["step"] = 3;
  CHECK(compare(traces).root_cause.causes[0].cause == RootCause::Class::nondeterministic_kernel);
  // Another host alone is no other environment: the kernel's race is the cause.
  traces[2].header.environment.erase("cpu_gemm_kernel");
  const auto same_build = compare(traces);
  CHECK(same_build.root_cause.causes.size() == 1);
  CHECK(same_build.root_cause.causes[0].cause == RootCause::Class::nondeterministic_kernel);
}
