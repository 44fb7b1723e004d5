// A trace written by an audit of a small model passes the reader whole and is written back byte
// for byte: the engine's writer and the reader agree on a real trace. This needs training; the
// reader's rules, on whole traces built in memory: tests/trace/trace_validation_test.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/audit.h"
#include "spec/parse.h"
#include "support/file_text.h"
#include "support/temp_dir.h"
#include "support/text_lines.h"
#include "trace/trace_io.h"

namespace {

using nlohmann::json;
using ra::test::lines_of;
using ra::test::read_text;
using ra::test::TempDir;

// 2 epochs of 3 steps, with an eval set: lines 1 header, 2 init, 3-5 steps, 6 epoch 0, 7-9 steps,
// 10 epoch 1, 11 end.
ra::spec::ExperimentSpec trace_spec() {
  return ra::spec::parse_spec(json::parse(R"({
    "name": "trace-validation", "seed": 9, "threads": 1,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 6, 6], "classes": 3},
             "eval": {"format": "random", "samples": 16, "shape": [1, 6, 6], "classes": 3, "seed": 2},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "adam", "lr": 0.01},
    "train": {"epochs": 2}})"),
                              ".");
}

constexpr int kEnd = 11;

// A 2-run audit of `spec` into dir/out.
ra::audit::AuditResult two_run_audit(const TempDir& dir, const ra::spec::ExperimentSpec& spec) {
  ra::audit::AuditOptions o;
  o.runs = 2;
  o.out_dir = dir.path / "out";
  return ra::audit::run_audit(spec, o);
}

}  // namespace

TEST_CASE("a trace written by an audit is read back whole", "[audit][trace]") {
  TempDir dir;
  ra::audit::AuditOptions o;
  o.runs = 1;
  o.out_dir = dir.path / "out";
  const auto run_file = ra::audit::run_audit(trace_spec(), o).trace_files.at(0);
  const auto t = ra::trace::read_trace(run_file);
  REQUIRE(lines_of(read_text(run_file)).size() == kEnd);
  REQUIRE(t.steps.size() == 6);
  REQUIRE(t.epochs.size() == 2);
  REQUIRE(t.final);
  REQUIRE(t.final->steps == 6);
  REQUIRE(t.header.spec_digest == ra::trace::spec_digest_of(t.header.spec).hex());
  // What the reader reads, the writer writes back byte for byte.
  REQUIRE(ra::trace::serialize_trace(t) == read_text(run_file));
}

TEST_CASE("an audit's traces say what recording cost, measured against a calibration",
          "[audit][trace]") {
  TempDir dir;
  const ra::audit::AuditResult result = two_run_audit(dir, trace_spec());
  for (const auto& file : result.trace_files) {
    const auto t = ra::trace::read_trace(file);
    REQUIRE(t.final->recording_cost);
    const ra::trace::RecordingCost& cost = *t.final->recording_cost;
    // 6 steps: 5 intervals from start to start, less the 2 of the warm-up, in the calibration.
    CHECK(cost.calibration_steps == 3);
    CHECK(cost.step_wall_seconds > 0.0);
    CHECK(cost.calibrated_step_wall_seconds > 0.0);
  }
  for (const auto& run : result.comparison.runs) {
    CHECK(run.recording_measured);
    const auto t = ra::trace::read_trace(run.source);
    CHECK(run.recording_fraction == t.final->recording_cost->fraction());
  }
}

TEST_CASE("an audit too short to calibrate sums the recorder's time, and says so",
          "[audit][trace]") {
  TempDir dir;
  ra::spec::ExperimentSpec spec = trace_spec();
  spec.train.max_steps = 3;  // 2 intervals, both warm-up
  const ra::audit::AuditResult result = two_run_audit(dir, spec);
  CHECK_FALSE(ra::trace::read_trace(result.trace_files.at(0)).final->recording_cost);
  for (const auto& run : result.comparison.runs) CHECK_FALSE(run.recording_measured);
}
