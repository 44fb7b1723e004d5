// The magnitude of an op root cause (audit/op_replay.h): a replay of the reference run executes
// the op again on the recorded inputs until each run's recorded outputs appear, then compares
// them. A one-bit fault has a size known in advance: flipping mantissa bit k of any float moves
// it by exactly 2^k ULP, in one element.
#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "audit/audit_compare.h"
#include "record/kept_outputs.h"
#include "spec/parse.h"
#include "support/op_trace_audit.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"

namespace {

using ra::compare::RootCause;
using ra::test::race_spec_json;
using ra::test::root_cause_spec_json;
using ra::test::TempDir;
using ra::test::traced_audit;

ra::spec::ExperimentSpec magnitude_spec_from(const nlohmann::json& j) {
  return ra::spec::parse_spec(j, ".");
}

ra::record::FaultSpec bit_flip_fault(int run, std::int64_t step, const std::string& layer_op,
                                     int bit) {
  ra::record::FaultSpec f;
  f.run = run;
  f.step = step;
  f.op = layer_op;
  f.element = 3;
  f.bit = bit;
  return f;
}

// The one op cause of a comparison, with its magnitude.
const RootCause& only_cause(const ra::compare::ComparisonResult& r) {
  REQUIRE(r.root_cause.causes.size() == 1);
  const RootCause& c = r.root_cause.causes[0];
  REQUIRE(c.kind == RootCause::Kind::op);
  REQUIRE(c.magnitude);
  INFO("note: " << c.magnitude->note);
  return c;
}

// Exactly one element of one output, moved by exactly 2^bit ULP.
void check_one_flip(const RootCause& c, int run, std::size_t output, int bit) {
  const RootCause::Magnitude& m = *c.magnitude;
  INFO(c.record.op << " in " << c.record.layer << "; note: " << m.note);
  CHECK(m.note.empty());
  REQUIRE(m.runs.size() == 1);
  CHECK(m.runs[0].run == run);
  REQUIRE(m.runs[0].outputs.size() == 1);
  const RootCause::OutputDifference& d = m.runs[0].outputs[0];
  CHECK(d.output == output);
  CHECK(d.difference.differing == 1);
  CHECK(d.difference.max_ulp == (std::uint64_t(1) << bit));
  CHECK(d.elements > 3);
  // The op is deterministic: its first execution gives the unfaulted outputs.
  CHECK(m.replays == 1);
  CHECK(m.executions == 1);
  CHECK(m.distinct_outputs == 1);
  CHECK(m.spread.empty());
}

struct FaultCase {
  const char* layer_op;
  std::size_t output;  // the output an op fault flips (a loss's gradient, not its value)
};

}  // namespace

TEST_CASE("the magnitude of a one-bit fault is one element moved by 2^bit ULP", "[audit][ops]") {
  const std::vector<FaultCase> cases = {
      {"conv2d_1/conv2d.backward_filter", 0},
      {"conv2d_1/conv2d.backward_data", 0},
      {"conv2d_0/conv2d.forward", 0},
      {"maxpool2d_0/maxpool2d.backward", 0},
      {"dense_0/dense.backward_weight", 0},
      {"dense_1/dense.backward_bias", 0},
      {"loss/softmax_cross_entropy", 1},
      // In place: the update overwrites the weight and its momentum, which each execution of the
      // replay restores first (else a second execution would apply the update twice).
      {"dense_0.weight/optimizer.update", 0}};
  for (const FaultCase& f : cases) {
    DYNAMIC_SECTION(f.layer_op) {
      TempDir dir;
      auto o = traced_audit(dir, 2);
      o.fault = bit_flip_fault(1, 1, f.layer_op, 4);
      const auto r =
          ra::audit::run_audit(magnitude_spec_from(root_cause_spec_json()), o).comparison;
      const RootCause& c = only_cause(r);
      CHECK(c.step == 1);
      check_one_flip(c, 1, f.output, 4);
    }
  }
}

TEST_CASE("a fault in the reference run is measured too, with the fault applied to it",
          "[audit][ops]") {
  TempDir dir;
  auto o = traced_audit(dir, 3);
  o.fault = bit_flip_fault(0, 2, "dense_0/dense.backward_weight", 0);
  const auto r = ra::audit::run_audit(magnitude_spec_from(root_cause_spec_json()), o).comparison;
  const RootCause& c = only_cause(r);
  CHECK(c.runs == std::vector<int>{1, 2});
  const RootCause::Magnitude& m = *c.magnitude;
  CHECK(m.note.empty());
  REQUIRE(m.runs.size() == 2);
  for (const RootCause::RunMagnitude& run : m.runs) {
    REQUIRE(run.outputs.size() == 1);
    CHECK(run.outputs[0].difference.differing == 1);
    CHECK(run.outputs[0].difference.max_ulp == 1);
  }
}

TEST_CASE("compare of the trace files measures the magnitude the audit measured", "[audit][ops]") {
  TempDir dir;
  auto o = traced_audit(dir, 2);
  o.fault = bit_flip_fault(1, 2, "conv2d_0/conv2d.backward_filter", 22);
  const auto in_process =
      ra::audit::run_audit(magnitude_spec_from(root_cause_spec_json()), o).comparison;
  const auto from_files = ra::audit::compare_inputs({dir.path}, {});
  const nlohmann::json a = ra::compare::to_json(in_process)["root_causes"];
  const nlohmann::json b = ra::compare::to_json(from_files)["root_causes"];
  REQUIRE(a.size() == 1);
  CHECK(a == b);
  CHECK(a[0]["magnitude"]["runs"][0]["outputs"][0]["max_ulp"] == 1 << 22);
  CHECK(a[0]["magnitude"]["runs"][0]["outputs"][0]["output"] == "dw");

  SECTION("and measures nothing when told not to") {
    ra::audit::AuditComparisonOptions options;
    options.measure_magnitudes = false;
    const auto unmeasured = ra::audit::compare_inputs({dir.path}, options);
    REQUIRE(unmeasured.root_cause.causes.size() == 1);
    CHECK_FALSE(unmeasured.root_cause.causes[0].magnitude);
    CHECK(ra::compare::to_json(unmeasured)["root_causes"][0]["magnitude"].is_null());
  }
}

TEST_CASE("a replay that cannot run here says why, and the verdict stands", "[audit][ops]") {
  TempDir dir;
  auto o = traced_audit(dir, 2);
  o.fault = bit_flip_fault(1, 1, "dense_1/dense.backward_weight", 2);
  const auto result = ra::audit::run_audit(magnitude_spec_from(root_cause_spec_json()), o);
  std::vector<ra::trace::Trace> traces;
  for (const auto& f : result.trace_files) traces.push_back(ra::trace::read_trace(f));
  // Traces of CPU runs, presented as GPU runs: without a GPU the replay cannot train, and with one
  // its GPU kernels part from the CPU's records before the op. Either way: no magnitude, a reason.
  for (auto& t : traces) t.header.backend = "cuda";
  const auto r = ra::audit::compare_with_snapshots(traces, {}, {});
  const RootCause& c = only_cause(r);
  CHECK(c.magnitude->runs.empty());
  CHECK_FALSE(c.magnitude->note.empty());
  CHECK(r.identity.identical == result.comparison.identity.identical);
}

TEST_CASE("a swapped batch has no magnitude to measure, and says so", "[audit][ops]") {
  TempDir dir;
  auto o = traced_audit(dir, 2);
  o.fault = ra::record::FaultSpec{1, 1, "batch", 0, 0, ""};
  const auto r = ra::audit::run_audit(magnitude_spec_from(root_cause_spec_json()), o).comparison;
  const RootCause& c = only_cause(r);
  CHECK(c.record.op == "batch");
  CHECK(c.magnitude->runs.empty());
  CHECK(c.magnitude->note.find("loader") != std::string::npos);
}

// A real race (4 threads, every reducing op nondeterministic). In the audit, each run kept the
// values of its nondeterministic ops as it ran, so every run of every cause is measured exactly,
// with no replay. compare of the files has no such values: it replays, steering each racing op
// before the cause to the reference's outcome, then executes the cause until each run's outcome
// appears. A racing reduction has many outcomes (a worker's share of the chunks varies), so that
// may not happen within the limits (a warning); where it does, the two independent measurements
// must agree exactly.
TEST_CASE("the magnitude of a real race: kept by the runs, and found again by a replay",
          "[audit][ops]") {
  nlohmann::json j = race_spec_json();
  j["determinism"] = {{"mode", "nondeterministic"}};
  TempDir dir;
  const auto r = ra::audit::run_audit(magnitude_spec_from(j), traced_audit(dir, 3)).comparison;
  if (r.identity.identical) WARN("no race showed in 3 runs of 2 steps");
  const auto replayed = ra::audit::compare_inputs({dir.path}, {});
  REQUIRE(replayed.root_cause.causes.size() == r.root_cause.causes.size());
  for (std::size_t k = 0; k < r.root_cause.causes.size(); ++k) {
    const RootCause& c = r.root_cause.causes[k];
    REQUIRE(c.kind == RootCause::Kind::op);
    REQUIRE(c.magnitude);
    const RootCause::Magnitude& m = *c.magnitude;
    INFO(c.record.op << " in " << c.record.layer << "; note: " << m.note);
    CHECK(m.note.empty());
    CHECK(m.kept == static_cast<int>(c.runs.size()) + 1);
    CHECK(m.replays == 0);
    REQUIRE(m.runs.size() == c.runs.size());
    for (const RootCause::RunMagnitude& run : m.runs) {
      REQUIRE_FALSE(run.outputs.empty());
      for (const RootCause::OutputDifference& d : run.outputs) {
        CHECK(d.difference.differing >= 1);
        CHECK(d.difference.differing <= d.elements);
        CHECK(d.difference.max_ulp >= 1);
      }
    }
    const RootCause::Magnitude& again = *replayed.root_cause.causes[k].magnitude;
    CHECK(again.replays >= 1);
    CHECK(again.spread.empty() == (again.distinct_outputs < 2));
    for (const RootCause::OutputDifference& d : again.spread) CHECK(d.difference.max_ulp >= 1);
    if (!again.note.empty()) {
      WARN("the replay of " << c.record.op << ": " << again.note);
      continue;
    }
    REQUIRE(again.runs.size() == m.runs.size());
    for (std::size_t i = 0; i < m.runs.size(); ++i) {
      REQUIRE(again.runs[i].outputs.size() == m.runs[i].outputs.size());
      for (std::size_t o = 0; o < m.runs[i].outputs.size(); ++o) {
        const auto &a = m.runs[i].outputs[o].difference, &b = again.runs[i].outputs[o].difference;
        CHECK(a.differing == b.differing);
        CHECK(a.max_ulp == b.max_ulp);
        CHECK(a.max_abs == b.max_abs);
      }
    }
  }
}

TEST_CASE("kept outputs stop at the run's budget and stay a prefix", "[audit][ops]") {
  ra::record::KeptOutputs kept(10);
  using Outputs = ra::record::KeptOutputs::Outputs;
  const Outputs four{{{1, 2, 3, 4}}, {ra::DType::f32}};
  const Outputs eight{{{1, 2, 3, 4, 5, 6, 7, 8}}, {ra::DType::f32}};
  CHECK(kept.keep(0, 0, 1, four));
  CHECK_FALSE(kept.keep(0, 0, 2, eight));  // 12 bytes > 10
  CHECK_FALSE(kept.keep(0, 1, 0, four));   // would fit, but the run's prefix has ended
  CHECK(kept.keep(1, 0, 1, eight));        // each run has a budget of its own
  REQUIRE(kept.find(0, 0, 1));
  CHECK(kept.find(0, 0, 1)->bytes == four.bytes);
  CHECK_FALSE(kept.find(0, 1, 0));
  CHECK_FALSE(kept.find(2, 0, 1));
}
