// Golden-text tests of the report: comparisons of traces built in memory
// (tests/trace/in_memory_traces.h) rendered as text (report::render_text) and as JSON
// (report::render_json, dumped as `--json` writes it) and as JUnit XML (report::render_junit), each
// compared byte for byte with a file checked in under tests/report/golden/ (<case>.txt,
// <case>.json, <case>.xml).
//
// When a change of the report is intended, regenerate the goldens and review the diff:
//     REPRO_AUDIT_UPDATE_GOLDEN=1 build/tests/test_report
//     git diff tests/report/golden
// (docs/report.md, "Golden tests"). A mismatch names the golden file and its first differing line.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "report/junit.h"
#include "report/readers_agree.h"
#include "report/sections.h"
#include "report/text_report.h"
#include "support/golden.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::compare::ComparisonResult;
using ra::test::runs_of;
using ra::test::TraceBuilder;
using ra::trace::Trace;

using ra::test::check_golden;

void check_report(const std::string& name, const ComparisonResult& result) {
  ra::test::check_golden_forms(name, result, false);  // every form below says the one verdict
}

// Snapshots of the divergence case: one weight element of run 2 is off from epoch 1 on, and at
// the end one bias near zero has changed sign (0.001 to -0.001: about 2e9 ULP across zero, kept
// out of the same-sign ULP maximum and counted as a sign flip).
bool divergence_snapshot(int run, const std::string& point,
                         std::vector<std::pair<std::string, ra::Tensor>>& out) {
  if (point == "step-3") return false;  // only steps that were snapshotted exist
  out.clear();
  for (const char* name : {"conv2d_0.weight", "conv2d_0.bias", "dense_1.weight"})
    out.emplace_back(name, ra::Tensor(ra::Shape{2, 3}, 0.5f));
  out[1].second.data()[2] = 0.001f;
  if (run == 2 && point != "initial" && point != "epoch-0") out[2].second.data()[4] = 0.50048828f;
  if (run == 2 && (point == "final" || point == "epoch-2")) out[1].second.data()[2] = -0.001f;
  return true;
}

}  // namespace

TEST_CASE("report golden: all runs bitwise identical", "[report][golden]") {
  TraceBuilder b;
  b.eval_accuracy = {0.8125, 0.875};
  check_report("identical", ra::compare::compare_traces(runs_of(b, 3), {}));
}

TEST_CASE("report golden: divergence at a step in one tensor", "[report][golden]") {
  TraceBuilder b;
  b.steps = 6;
  b.eval_accuracy = {0.75, 0.8125, 0.875};
  std::vector<Trace> traces = runs_of(b, 3);
  ra::test::diverge(traces[2], 2, 2);  // dense_1.weight's gradient at step 2
  traces[2].epochs[1].eval_accuracy = 0.8;
  traces[2].epochs[2].eval_accuracy = 0.86;
  traces[2].final->eval_accuracy = 0.86;
  ra::compare::ComparisonOptions options;
  options.load_snapshot = divergence_snapshot;
  check_report("divergence", ra::compare::compare_traces(traces, options));
}

TEST_CASE("report golden: an audit folder with missing runs", "[report][golden]") {
  TraceBuilder b;
  std::vector<Trace> traces = runs_of(b, 3);
  ComparisonResult result = ra::compare::compare_traces(traces, {});
  ra::compare::AuditFolderCheck folder;
  folder.folder = "out";
  folder.audit_id = "00112233445566778899aabbccddeeff";
  folder.planned_runs = 4;
  folder.runs = {0, 1, 3};
  folder.missing_runs = {{2, "partial trace run-002.trace.jsonl.tmp-1234 (interrupted)"}};
  folder.foreign_files = {{"run-007.trace.jsonl", "run 7 is not in the manifest"}};
  folder.notes = {"an audit is still running in the folder"};
  result.sources.audit_folders.push_back(folder);
  result.sources.ignored_snapshots = {
      "out/run-001/weights-final.safetensors: belongs to audit "
      "ffeeddccbbaa99887766554433221100, its trace to audit "
      "00112233445566778899aabbccddeeff"};
  check_report("missing_runs", result);
}

TEST_CASE("report golden: same and different seed groups", "[report][golden]") {
  TraceBuilder same;
  same.eval_accuracy = {0.8, 0.85};
  std::vector<Trace> traces = runs_of(same, 3);
  const double accuracy[] = {0.83, 0.86, 0.81};
  for (int i = 0; i < 3; ++i) {
    TraceBuilder different = same;
    different.seed_group = "different";
    different.seed = 1000 + static_cast<std::uint64_t>(i);
    different.eval_accuracy = {0.8, accuracy[i]};
    different.step_seconds = 0.0021 + 0.0001 * i;
    traces.push_back(different.build(3 + i));
  }
  check_report("seed_groups", ra::compare::compare_traces(traces, {}));
}

TEST_CASE("report golden: environment and ledger differences", "[report][golden]") {
  TraceBuilder b;
  std::vector<Trace> traces = runs_of(b, 2);
  traces[1].header.environment["hostname"] = "host-b";
  traces[1].header.environment["cpu_model"] = "Other CPU";
  // Both ran on a GPU; run 1's autotune chose another backward-data algorithm, and its ledger
  // lacks the filter gradient's entry.
  const auto entry = [](const std::string& direction, const std::string& algorithm, double ms) {
    return nlohmann::json{
        {"layer", "conv 8x3x16x16 k4 3x3 s1 p0"},
        {"direction", direction},
        {"algorithm", algorithm},
        {"deterministic", algorithm.find("ALGO_0") == std::string::npos},
        {"math_type", "CUDNN_FMA_MATH"},
        {"workspace_bytes", 0},
        {"chosen_by", "autotuned"},
        {"autotune", {{"math_type", "CUDNN_FMA_MATH"}, {"time_ms", ms}, {"workspace_bytes", 0}}}};
  };
  traces[0].header.ledger = nlohmann::json::array(
      {entry("backward_data", "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING", 0.125),
       entry("backward_filter", "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0", 0.0625)});
  traces[1].header.ledger =
      nlohmann::json::array({entry("backward_data", "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0", 0.25)});
  ra::test::diverge(traces[1], 0, 0);
  ra::compare::ComparisonOptions options;
  options.expect_identical = false;
  check_report("environment", ra::compare::compare_traces(traces, options));
}

TEST_CASE("report golden: nondeterministic runs and their timing", "[report][golden]") {
  TraceBuilder b;
  b.mode = "nondeterministic";
  b.mode_ops = {{"conv2d.backward_filter", "deterministic"}};
  b.steps = 4;
  std::vector<Trace> traces;
  const double seconds[] = {0.0020, 0.0031, 0.0024, 0.0027};
  for (int i = 0; i < 4; ++i) {
    b.step_seconds = seconds[i];
    b.recording_seconds = 0.00004 * (i + 1);
    traces.push_back(b.build(i));
  }
  ra::test::diverge(traces[1], 1, 1, 1);
  ra::test::diverge(traces[3], 3, 0, 200);
  check_report("nondeterministic_timing", ra::compare::compare_traces(traces, {}));
}
