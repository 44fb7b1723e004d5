// Op records of PyTorch runs (lib/python/repro_audit/op_records.py): their types through the
// trace file and the reader's check of them, and the names a report gives their positions. (What
// a differing input is said to come from: tests/compare/pytorch_root_cause_test.cpp; the outputs
// the runs kept: tests/rundir/kept_outputs_file_test.cpp.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "trace/op_names.h"
#include "trace/pytorch_op_traces.h"
#include "trace/trace_io.h"
#include "trace/whole_trace.h"

using Catch::Matchers::Contains;

namespace {

using ra::test::aten_ops;
using ra::test::pytorch_runs;
using ra::trace::OpRecord;
using ra::trace::Trace;

}  // namespace

TEST_CASE("op record types survive the trace file and are checked", "[trace][ops][pytorch]") {
  auto traces = pytorch_runs(1);
  Trace& t = traces[0];
  ra::test::make_whole(t);
  const std::string text = ra::trace::serialize_trace(traces[0]);
  const Trace back = ra::trace::parse_trace(text, "t.trace.jsonl");
  REQUIRE(back.steps[1].ops.size() == 3);
  CHECK(back.steps[1].ops[2].in_types == std::vector<std::string>{"f32[8,32]", "f32[]", "args"});
  CHECK(back.steps[1].ops[1].out_types == std::vector<std::string>{"f32[]"});
  CHECK(ra::trace::serialize_trace(back) == text);

  SECTION("one type per digest, or none") {
    std::string bad = text;
    const std::string types = R"("in_types":["f32[8,32]","f32[]","args"])";
    bad.replace(bad.find(types), types.size(), R"("in_types":["f32[8,32]","args"])");
    CHECK_THROWS_WITH(ra::trace::parse_trace(bad, "t.trace.jsonl"),
                      Contains("expected 3 types, one per digest, found 2"));
  }
  SECTION("a type is a non-empty string") {
    std::string bad = text;
    const std::string types = R"("out_types":["f32[]"])";
    bad.replace(bad.find(types), types.size(), R"("out_types":[""])");
    CHECK_THROWS(ra::trace::parse_trace(bad, "t.trace.jsonl"));
  }
}

TEST_CASE("a typed record's positions are named by their types", "[trace][ops][pytorch]") {
  const std::vector<OpRecord> ops = aten_ops(0);
  CHECK(ra::trace::op_input_name(ops[0], 0) == "input 0 (f32[8,32])");
  CHECK(ra::trace::op_input_name(ops[0], 1) == "the generator state");
  CHECK(ra::trace::op_input_name(ops[2], 2) == "the non-tensor arguments");
  CHECK(ra::trace::op_output_name(ops[1], 0) == "output 0 (f32[])");
  // An engine record has no types: its op names its positions.
  const OpRecord engine{"conv2d.backward_filter", "conv2d_0", "", "", {}, {}};
  CHECK(ra::trace::op_input_name(engine, 1) == "dy");
}
