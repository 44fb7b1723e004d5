// The op alignment finding (compare/checks.h, compare/alignment_finding.cpp) on PyTorch-like
// traces built in memory: two programs whose norm is three ops in one and one fused op in the
// other pass when the fused op gives the same bits and fail, naming the norm, when it does not;
// an op with equal inputs and another output is named as the op; runs that differ where no
// aligned op shows it fail too; without --align nothing changes; and what cannot be aligned is an
// InputError naming the problem.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare.h"
#include "compare/verdict.h"
#include "core/error.h"
#include "support/temp_dir.h"
#include "trace/op_window.h"
#include "trace/pytorch_op_traces.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"
#include "trace/whole_trace.h"

using Catch::Matchers::Contains;

namespace {

using ra::compare::CheckOutcome;
using ra::compare::Finding;
using ra::test::aten_digest;
using ra::test::changed;
using ra::trace::OpRecord;
using ra::trace::Trace;

// Program A: pytorch_runs' records (a random op, then the norm as a sum and a division in
// model.norm), and a head reading the norm's output.
std::vector<Trace> two_programs() {
  std::vector<Trace> traces = ra::test::pytorch_runs(2);
  for (Trace& t : traces) {
    for (auto& s : t.steps) {
      OpRecord head{"aten.addmm.default",       "model.head", "", "", {s.ops[2].out[0]},
                    {aten_digest(7, s.step, 0)}};
      head.in_types = {"f32[8,32]"};
      head.out_types = {"f32[8,4]"};
      s.ops.push_back(head);
    }
  }
  traces[1].header.spec_digest = "fedcba9876543210fedcba9876543210";  // another program
  return traces;
}

// Program B computes the norm in one fused op; its output, at `step`, other bits than A's.
void fuse_norm(Trace& t, std::optional<std::int64_t> step = std::nullopt) {
  for (auto& s : t.steps) {
    const bool differs = step && s.step == *step;
    OpRecord fused{"aten.native_layer_norm.default",
                   "model.norm",
                   "",
                   "",
                   {s.ops[0].out[0]},
                   {differs ? changed(s.ops[2].out[0]) : s.ops[2].out[0]}};
    fused.in_types = {"f32[8,32]"};
    fused.out_types = {"f32[8,32]"};
    s.ops.erase(s.ops.begin() + 1, s.ops.begin() + 3);
    s.ops.insert(s.ops.begin() + 1, fused);
    if (differs) {
      s.ops[2].in[0] = s.ops[1].out[0];
      s.ops[2].out[0] = changed(s.ops[2].out[0]);
    }
  }
  if (step) ra::test::diverge(t, *step, 0);
}

ra::compare::ComparisonResult aligned(const std::vector<Trace>& traces) {
  ra::compare::ComparisonOptions o;
  o.align = true;
  return ra::compare::compare_traces(traces, o);
}

Finding alignment_of(const ra::compare::ComparisonResult& r) {
  const Finding* f = ra::compare::finding_of(r.findings, "op_alignment");
  REQUIRE(f != nullptr);
  return *f;
}

}  // namespace

TEST_CASE("two programs that agree op for op pass the alignment", "[compare][align][checks]") {
  auto traces = two_programs();
  SECTION("the same ops") {
    const auto r = aligned(traces);
    const Finding f = alignment_of(r);
    CHECK(f.outcome == CheckOutcome::passed);
    CHECK_THAT(f.summary, Contains("every op aligned and agreed at the 4 steps"));
    CHECK(f.table.rows.empty());
    CHECK(r.root_cause.causes.empty());
    CHECK(ra::compare::audit_verdict(r).exit_code() == 0);
  }
  SECTION("a fused norm that gives the same bits") {
    fuse_norm(traces[1]);
    const Finding f = alignment_of(aligned(traces));
    CHECK(f.outcome == CheckOutcome::passed);
    CHECK_THAT(f.summary, Contains("the 4 unaligned stretches ended in equal outputs"));
    REQUIRE(f.table.rows.size() == 4);
    CHECK(f.table.rows[0] == std::vector<std::string>{"0", "model.norm",
                                                      "2: aten.sum.default, aten.div.Tensor",
                                                      "1: aten.native_layer_norm.default"});
    CHECK(f.data["steps"][0]["aligned"] == 2);
  }
}

TEST_CASE("where two programs part, the alignment names it", "[compare][align][checks]") {
  auto traces = two_programs();
  SECTION("the fused norm gives other bits at step 1: the norm") {
    fuse_norm(traces[1], 1);
    const auto r = aligned(traces);
    const Finding f = alignment_of(r);
    CHECK(f.outcome == CheckOutcome::failed);
    CHECK_THAT(f.summary,
               Contains("the programs part at step 1 in model.norm, in ops only one of them runs "
                        "there (2 in A, 1 in B)") &&
                   Contains("aten.addmm.default in model.head, reads another value"));
    CHECK(f.data["parting"]["kind"] == "stretch");
    CHECK(f.data["parting"]["stretch"]["b"]["ops"][0] == "aten.native_layer_norm.default");
    CHECK(ra::compare::audit_verdict(r).exit_code() == 1);
  }
  SECTION("an aligned op with equal inputs and another output: the op") {
    auto& head = traces[1].steps[2].ops[3];
    head.out[0] = changed(head.out[0]);
    ra::test::diverge(traces[1], 2, 0);
    const Finding f = alignment_of(aligned(traces));
    CHECK(f.outcome == CheckOutcome::failed);
    CHECK_THAT(f.summary, Contains("at step 2 in model.head: its 1st aten.addmm.default read the "
                                   "same inputs in both and wrote another output 0 (f32[8,4])"));
    CHECK(f.data["parting"]["kind"] == "op");
  }
  SECTION("the engine's batch pseudo-op: the batch, no kernel") {
    for (Trace& t : traces) {
      for (auto& s : t.steps) {
        s.ops.insert(s.ops.begin(), OpRecord{"batch", "", "", "", {}, {s.batch_inputs}});
      }
    }
    auto& batch = traces[1].steps[0].ops[0];
    batch.out[0] = changed(batch.out[0]);
    traces[1].steps[0].batch_inputs = batch.out[0];
    const Finding f = alignment_of(aligned(traces));
    CHECK(f.outcome == CheckOutcome::failed);
    CHECK_THAT(f.summary, Contains("part at step 0 in their batch (the data order or the data "
                                   "read), before any op"));
  }
  SECTION("the runs differ where no aligned op shows it") {
    ra::test::diverge(traces[1], 3, 0);
    const Finding f = alignment_of(aligned(traces));
    CHECK(f.outcome == CheckOutcome::failed);
    CHECK_THAT(f.summary, Contains("every aligned op agreed at the 4 steps of the op window, but "
                                   "the runs differ: first in gradients at step 3"));
    CHECK(f.data["parting"].is_null());
  }
}

TEST_CASE("without --align, two programs' traces are compared as before", "[compare][align]") {
  auto traces = ra::test::pytorch_runs(2);
  CHECK(ra::compare::finding_of(ra::compare::compare_traces(traces, {}).findings, "op_alignment") ==
        nullptr);
  traces[1].header.spec_digest = "fedcba9876543210fedcba9876543210";
  CHECK_THROWS_WITH(ra::compare::compare_traces(traces, {}),
                    Contains("traces come from different specs"));
}

TEST_CASE("traces that cannot be aligned are named with the problem", "[compare][align]") {
  auto traces = two_programs();
  SECTION("four traces") {
    traces.push_back(traces[0]);
    traces.push_back(traces[0]);
    CHECK_THROWS_WITH(aligned(traces),
                      Contains("--align compares two traces") && Contains("4 given"));
  }
  SECTION("a third trace that is no perturbed run of A") {
    traces.push_back(traces[0]);
    CHECK_THROWS_WITH(aligned(traces), Contains("the third trace of --align is the control"));
  }
  SECTION("a control with another op window than A's") {
    traces.push_back(traces[0]);
    traces[2].header.perturbation = ra::trace::Perturbation{"dense_1.weight", 2, 0, 2, 3};
    traces[2].header.trace_ops = ra::trace::parse_op_window("1:2");
    CHECK_THROWS_WITH(aligned(traces),
                      Contains("the control must record the ops of A's op window"));
  }
  SECTION("a trace without op records") {
    traces[1].header.trace_ops.reset();
    traces[1].source = "b.trace.jsonl";
    CHECK_THROWS_WITH(aligned(traces),
                      Contains("b.trace.jsonl has no op records") && Contains("--trace-ops"));
  }
  SECTION("op windows at different steps") {
    traces[1].header.trace_ops = ra::trace::OpWindow{2, 3};
    CHECK_THROWS_WITH(aligned(traces), Contains("op windows at different steps") &&
                                           Contains("--trace-ops all") &&
                                           Contains("with --trace-ops 2:3"));
  }
  SECTION("parameters of other names: the first unmatched of each side listed") {
    traces[1].header.params[0].name = "norm.gamma";
    traces[1].header.params[2].name = "norm.beta";
    CHECK_THROWS_AS(aligned(traces), ra::InputError);
    CHECK_THROWS_WITH(aligned(traces),
                      Contains("parameters do not pair up by name") &&
                          Contains("only in A (run-000.trace.jsonl): conv2d_0.weight, "
                                   "dense_1.weight") &&
                          Contains("only in B (run-001.trace.jsonl): norm.gamma, norm.beta"));
  }
  SECTION("a parameter of another shape") {
    traces[1].header.params[1].shape = {3, 2};
    CHECK_THROWS_WITH(aligned(traces), Contains("parameter conv2d_0.bias is f32[2, 3] in A") &&
                                           Contains("f32[3, 2] in B"));
  }
}

TEST_CASE("traces read without their steps are aligned from their files", "[compare][align]") {
  auto traces = two_programs();
  fuse_norm(traces[1], 1);
  ra::test::TempDir dir;
  std::vector<Trace> read;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    ra::test::make_whole(traces[i]);
    const auto path = dir.path / ("run-00" + std::to_string(i) + ".trace.jsonl");
    ra::trace::write_trace(path, traces[i]);
    read.push_back(ra::trace::read_trace_summary(path));
    REQUIRE(read.back().steps_in_source);
  }
  const Finding f = alignment_of(aligned(read));
  CHECK(f.outcome == CheckOutcome::failed);
  CHECK(f.data["parting"]["step"] == 1);
  CHECK(f.data["parting"]["layer"] == "model.head");
}

namespace {

// Program A's perturbed run: A's trace under a perturbed run's header; `parts`: its first op reads
// another input (the flipped weight) and writes another output, as a real perturbed run does.
Trace perturbed_run_of(const Trace& a, bool parts) {
  Trace control = a;
  control.source = "control.trace.jsonl";
  control.header.seed_group = "perturbed";
  control.header.perturbation = ra::trace::Perturbation{"model.head.weight", 0, 0, 2, 3};
  if (parts) {
    OpRecord& first = control.steps[0].ops[0];
    first.in[0] = changed(first.in[0]);
    first.out[0] = changed(first.out[0]);
  }
  return control;
}

Finding alignment_among(const ra::compare::ComparisonResult& r) {
  for (const Finding& f : r.findings) {
    if (f.id == "op_alignment") return f;
  }
  FAIL("no op_alignment finding");
  return {};
}

}  // namespace

TEST_CASE("an alignment without a parting passes only when its control parts", "[compare][align]") {
  auto traces = two_programs();
  SECTION("no control: passed, and the details say so") {
    const Finding f = alignment_of(aligned(traces));
    CHECK(f.outcome == CheckOutcome::passed);
    CHECK(f.data["control"].is_null());
    CHECK_THAT(f.details.back(), Contains("no control"));
  }
  SECTION("a control that parts: passed") {
    traces.push_back(perturbed_run_of(traces[0], true));
    const auto r = aligned(traces);
    const Finding f = alignment_among(r);
    CHECK(f.outcome == CheckOutcome::passed);
    CHECK(f.data["control"]["parted"] == true);
    CHECK(f.data["control"]["step"] == 0);
    CHECK_THAT(f.details.back(), Contains("the alignment sees a one-bit change"));
  }
  SECTION("a control that parts nowhere: inconclusive, exit 6") {
    traces.push_back(perturbed_run_of(traces[0], false));
    const auto r = aligned(traces);
    const Finding f = alignment_among(r);
    CHECK(f.outcome == CheckOutcome::inconclusive);
    CHECK_THAT(f.summary, Contains("the control, A's perturbed run, did not part"));
    CHECK(ra::compare::audit_verdict(r).exit_code() == 6);
  }
}
