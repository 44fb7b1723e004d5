// What the comparison says of a PyTorch run's op records (lib/python/repro_audit/op_records.py):
// where a differing input comes from, as its type says, and the cuDNN engines read from the log
// that explain a divergence. (The records' types through the trace file: tests/trace.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare.h"
#include "trace/pytorch_op_traces.h"
#include "trace/trace_io.h"
#include "trace/whole_trace.h"

using Catch::Matchers::Contains;

namespace {

using ra::compare::RootCause;
using ra::test::changed;
using ra::test::pytorch_runs;
using ra::trace::Trace;

// Record 1's output differs at `step` on identical inputs, and record 2, which reads it, with it.
void sum_output_differs(Trace& t, std::int64_t step) {
  auto& ops = t.steps[static_cast<std::size_t>(step)].ops;
  ops[1].out[0] = changed(ops[1].out[0]);
  ops[2].in[1] = ops[1].out[0];
  ops[2].out[0] = changed(ops[2].out[0]);
  ra::test::diverge(t, step, 0);
}

RootCause only_cause(std::vector<Trace>& traces) {
  ra::compare::ComparisonOptions o;
  o.expect_identical = false;
  const auto r = ra::compare::compare_traces(traces, o);
  REQUIRE(r.root_cause.causes.size() == 1);
  return r.root_cause.causes[0];
}

}  // namespace

TEST_CASE("a PyTorch op's differing input is said to come from where its type says",
          "[compare][ops][pytorch]") {
  auto traces = pytorch_runs(2);
  auto& ops = traces[1].steps[1].ops;
  SECTION("the generator state: seeded differently") {
    ops[0].in[1] = changed(ops[0].in[1]);
    ops[0].out[0] = changed(ops[0].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    const RootCause c = only_cause(traces);
    CHECK(c.kind == RootCause::Kind::outside_ops);
    CHECK(c.differing_inputs == std::vector<std::size_t>{1});
    CHECK_THAT(c.detail, Contains("the random generator's state differs"));
  }
  SECTION("the non-tensor arguments: a Python value") {
    ops[2].in[2] = changed(ops[2].in[2]);
    ops[2].out[0] = changed(ops[2].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    CHECK_THAT(only_cause(traces).detail, Contains("a Python value passed to the op differs"));
  }
  SECTION("a tensor no recorded op made: blamed at the next op the dispatcher saw") {
    ops[1].in[0] = changed(ops[1].in[0]);
    ops[1].out[0] = changed(ops[1].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    const RootCause c = only_cause(traces);
    CHECK(c.record.op == "aten.sum.default");
    CHECK_THAT(c.detail, Contains("bypasses PyTorch's dispatcher"));
  }
  SECTION("an op's own output: the op is the cause") {
    sum_output_differs(traces[1], 1);
    const RootCause c = only_cause(traces);
    CHECK(c.kind == RootCause::Kind::op);
    CHECK(c.record.layer == "model.norm");
    CHECK(c.detail.empty());
    REQUIRE(c.chain.size() == 1);
    CHECK(c.chain[0].op == "aten.div.Tensor");
  }
  SECTION("the chain ends where the runs' ops part: past it no pair says anything") {
    ops[1].out[0] = changed(ops[1].out[0]);
    ops[2].op = "aten.mul.Tensor";  // a branch on the differing value
    ops[2].out[0] = changed(ops[2].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    const RootCause c = only_cause(traces);
    CHECK(c.record.op == "aten.sum.default");
    CHECK(c.chain.empty());
  }
}

TEST_CASE("cuDNN engines read from the log explain a PyTorch run's divergence",
          "[compare][ops][pytorch]") {
  // cudnn.benchmark chose engine 34 for the filter gradient in run 0 and engine 3 in run 1: the
  // convolution's output differs on identical inputs, and the records name the engines.
  auto traces = pytorch_runs(2);
  const std::string key = "conv 8x1x6x6 k4 3x3 s1 p0";
  for (int r = 0; r < 2; ++r) {
    const std::string algorithm = r == 0 ? "cudnn engine 34" : "cudnn engine 3";
    traces[r].header.ledger = nlohmann::json::array({{{"layer", key},
                                                      {"direction", "backward_filter"},
                                                      {"algorithm", algorithm},
                                                      {"engine", r == 0 ? 34 : 3},
                                                      {"deterministic", r == 0},
                                                      {"math_type", "fma"},
                                                      {"chosen_by", "cudnn.benchmark"}}});
    for (auto& s : traces[r].steps) {
      s.ops[1].op = "aten.convolution_backward.default";
      s.ops[1].ledger_key = key;
      s.ops[1].algorithm = "backward_filter: " + algorithm;
      s.ops[1].algorithm_deterministic = r == 0;
    }
  }
  sum_output_differs(traces[1], 1);
  const RootCause c = only_cause(traces);
  CHECK(c.kind == RootCause::Kind::op);
  CHECK(c.cause == RootCause::Class::algorithm_choice);
  REQUIRE(c.algorithms.size() == 2);
  CHECK(c.algorithms[0].algorithm == "backward_filter: cudnn engine 34");
  CHECK(c.algorithms[1].algorithm == "backward_filter: cudnn engine 3");

  SECTION("the ledger's entries, without a workspace, read back") {
    Trace& t = traces[0];
    ra::test::make_whole(t);
    const Trace back = ra::trace::parse_trace(ra::trace::serialize_trace(t), "t.trace.jsonl");
    CHECK(back.header.ledger == t.header.ledger);
    std::string bad = ra::trace::serialize_trace(t);
    bad.replace(bad.find(R"("engine":34)"), 11, R"("engine":"x")");
    CHECK_THROWS_WITH(ra::trace::parse_trace(bad, "t.trace.jsonl"), Contains("engine"));
  }
}
