// Op records of the engine through the trace file (--trace-ops): an audit of a small model writes
// version 2 with its op window and each step's records in execution order, each naming the CPU
// kernel it ran, and the text reads back and writes back unchanged; version 1 is as before. This
// needs training: what is checked is which ops the engine runs and records. (The reader's rules
// for op records on traces built in memory: tests/trace.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "audit/audit.h"
#include "core/atomic_file.h"
#include "spec/parse.h"
#include "support/temp_dir.h"
#include "trace/op_window.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;
using ra::trace::OpRecord;
using ra::trace::Trace;

TEST_CASE("op records survive the trace file, version 2, and version 1 is unchanged",
          "[audit][ops][trace]") {
  const auto spec = ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "io", "seed": 3, "threads": 1,
    "data": {"train": {"format": "random", "samples": 24, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 8},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.1}})"),
                                         ".");
  ra::test::TempDir dir;
  ra::audit::AuditOptions o;
  o.runs = 1;
  o.out_dir = dir.path;
  o.trace_ops = ra::trace::OpWindow{1, 3};
  const auto result = ra::audit::run_audit(spec, o);
  const std::string text = ra::read_file(result.trace_files[0]);
  const Trace t = ra::trace::parse_trace(text, "t.trace.jsonl");
  CHECK(t.header.format_version == 2);
  REQUIRE(t.header.trace_ops);
  CHECK(*t.header.trace_ops == ra::trace::OpWindow{1, 3});
  REQUIRE(t.steps.size() == 3);
  CHECK_FALSE(t.steps[0].ops_recorded);
  for (int s = 1; s < 3; ++s) {
    REQUIRE(t.steps[s].ops_recorded);
    std::vector<std::string> ops;
    for (const OpRecord& r : t.steps[s].ops) ops.push_back(r.op + "@" + r.layer);
    CHECK(ops == std::vector<std::string>{
                     "batch@", "conv2d.forward@conv2d_0", "dense.forward@dense_0",
                     "softmax_cross_entropy@loss", "dense.backward_weight@dense_0",
                     "dense.backward_bias@dense_0", "dense.backward_data@dense_0",
                     "activation.backward@conv2d_0", "conv2d.backward_filter@conv2d_0",
                     "conv2d.backward_bias@conv2d_0", "optimizer.update@conv2d_0.weight",
                     "optimizer.update@conv2d_0.bias", "optimizer.update@dense_0.weight",
                     "optimizer.update@dense_0.bias"});
  }
  // Every op with a ledger key names the CPU kernel it ran: one per op, instruction set and mode.
  for (const OpRecord& r : t.steps[1].ops) {
    INFO(r.op << ": " << r.algorithm);
    if (r.ledger_key.empty()) {
      CHECK(r.algorithm.empty());
      continue;
    }
    CHECK(r.algorithm.rfind("cpu ", 0) == 0);
    CHECK(r.algorithm_deterministic == true);  // the spec's mode: deterministic
    if (r.mode.empty()) {
      CHECK(r.algorithm.find(',') == std::string::npos);  // a forward op: no reduction to name
    } else {
      CHECK_THAT(r.algorithm, Contains(", fixed reduction tree"));
    }
  }
  // Written back, the same text: nothing of the records is lost or reordered.
  CHECK(ra::trace::serialize_trace(t) == text);

  SECTION("a version 1 trace has neither the window nor op records") {
    ra::test::TempDir plain_dir;
    o.out_dir = plain_dir.path;
    o.trace_ops.reset();
    const std::string plain = ra::read_file(ra::audit::run_audit(spec, o).trace_files[0]);
    CHECK(plain.find("\"format_version\":1") != std::string::npos);
    CHECK(plain.find("trace_ops") == std::string::npos);
    CHECK(plain.find("\"ops\":[") == std::string::npos);
  }
  SECTION("op records outside the window are refused") {
    std::string bad = text;
    bad.replace(bad.find("\"first\":1"), 9, "\"first\":2");
    CHECK_THROWS_WITH(ra::trace::parse_trace(bad, "t.trace.jsonl"),
                      Contains("step 1 is outside the op window"));
  }
  SECTION("a step of the window without op records is refused") {
    std::string bad = text;
    bad.replace(bad.find("\"first\":1"), 9, "\"first\":0");
    CHECK_THROWS_WITH(ra::trace::parse_trace(bad, "t.trace.jsonl"),
                      Contains("field 'ops' is missing: step 0 is in the op window"));
  }
  SECTION("a version 1 header with a window is refused") {
    std::string bad = text;
    bad.replace(bad.find("\"format_version\":2"), 18, "\"format_version\":1");
    CHECK_THROWS_WITH(ra::trace::parse_trace(bad, "t.trace.jsonl"),
                      Contains("op records need trace format version 2"));
  }
}
