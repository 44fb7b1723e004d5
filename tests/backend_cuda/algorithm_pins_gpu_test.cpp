// Autotune once, pin for every run ([gpu]: each case skips with the reason where no GPU is usable,
// as on every machine of this project's CI): --save-algorithms from an autotuned run, then
// --pin-algorithms for several runs, bitwise identical when the pinned algorithms are
// deterministic; and runs pinned to different algorithms, whose root cause is the algorithm
// choice, measured exactly with each run's own algorithm.
#include <catch2/catch.hpp>

#include "backend_cuda/gpu_test_support.h"
#include "compare/finding_facts.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/audit.h"
#include "audit/pinned_algorithms.h"
#include "rundir/algorithm_file.h"
#include "spec/parse.h"
#include "support/op_trace_audit.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"
#include "train/backend_choice.h"

namespace {

namespace fs = std::filesystem;
using ra::compare::RootCause;
using ra::test::TempDir;

// Random data (no files needed): the Keras convnet's shapes, two convs and two dense layers.
ra::spec::ExperimentSpec pin_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "pins-gpu", "seed": 5, "device": "cuda",
    "data": {"train": {"format": "random", "samples": 512, "shape": [1, 28, 28], "classes": 10},
             "batch_size": 128},
    "model": {"input": [1, 28, 28], "layers": [
      {"type": "conv2d", "filters": 32, "kernel": 3, "activation": "relu"},
      {"type": "conv2d", "filters": 64, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"},
      {"type": "dense", "units": 128, "activation": "relu"}, {"type": "dense", "units": 10}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 1, "max_steps": 4}})"),
                              ".");
}

// The deterministic algorithm of each direction that a file may hold instead of an atomic one.
std::string deterministic_instead(const nlohmann::json& entry) {
  const std::string direction = entry.value("direction", "");
  if (direction == "backward_filter") return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1";
  if (direction == "backward_data") return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1";
  return entry.value("algorithm", "");
}

// Saves the algorithms of one autotuned run into dir/autotuned.json and returns the file with
// every non-deterministic convolution algorithm replaced by a deterministic one.
ra::rundir::AlgorithmFile autotuned_file(const TempDir& dir) {
  ra::audit::AuditOptions o;
  o.runs = 1;
  o.out_dir = dir.path / "tune";
  o.mode = ra::spec::KernelMode::autotune;
  o.save_algorithms = dir.path / "autotuned.json";
  ra::audit::run_audit(pin_spec(), o);
  ra::rundir::AlgorithmFile file = ra::rundir::read_algorithm_file(o.save_algorithms);
  for (nlohmann::json& e : file.algorithms) {
    if (e.value("deterministic", true)) continue;
    if (e.value("layer", "").rfind("conv ", 0) != 0) continue;
    e["algorithm"] = deterministic_instead(e);
    e["deterministic"] = true;
  }
  return file;
}

std::shared_ptr<const ra::backend::AlgorithmPins> pins_from(const fs::path& file) {
  return std::make_shared<const ra::backend::AlgorithmPins>(
      ra::audit::pins_for_run(file, pin_spec(), ra::train::gpu_fingerprint()));
}

}  // namespace

TEST_CASE("pinned deterministic algorithms from an autotuned run: bitwise identical runs",
          "[gpu]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  TempDir dir;
  ra::rundir::write_algorithm_file(dir.path / "pins.json", autotuned_file(dir));
  ra::audit::AuditOptions o;
  o.runs = 3;
  o.out_dir = dir.path / "pinned";
  o.mode = ra::spec::KernelMode::autotune;
  o.algorithm_pins = pins_from(dir.path / "pins.json");
  const ra::audit::AuditResult result = ra::audit::run_audit(pin_spec(), o);
  // Nothing chosen by timing, every algorithm deterministic: identity is expected, and holds.
  CHECK(result.comparison.identity.expect_identical);
  CHECK(result.comparison.identity.identical);
  CHECK(ra::compare::environment_of(result.comparison).ledger.empty());
  for (const fs::path& trace : result.trace_files) {
    for (const nlohmann::json& e : ra::trace::read_trace(trace).header.ledger) {
      if (e.value("layer", "").rfind("conv ", 0) != 0 ||
          e.value("direction", "") == "backward_bias")
        continue;
      INFO(e.dump());
      CHECK(e["chosen_by"] == "pinned-file");
      CHECK(e["deterministic"] == true);
    }
  }
}

TEST_CASE("runs pinned to other algorithms: the algorithm choice, measured with each run's own",
          "[gpu]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  TempDir dir;
  ra::rundir::AlgorithmFile file = autotuned_file(dir);
  const std::string second_conv = "conv 128x32x26x26 k64 3x3 s1 p0";
  const auto pin_filter = [&](const std::string& algorithm, const fs::path& path) {
    for (nlohmann::json& e : file.algorithms) {
      if (e["layer"] == second_conv && e["direction"] == "backward_filter") {
        e["algorithm"] = algorithm;
      }
    }
    ra::rundir::write_algorithm_file(path, file);
  };
  pin_filter("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1", dir.path / "one.json");
  pin_filter("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT", dir.path / "fft.json");
  std::vector<fs::path> traces;
  for (const char* name : {"one", "fft"}) {
    ra::audit::AuditOptions o = ra::test::traced_audit(dir, 1);
    o.out_dir = dir.path / name;
    o.mode = ra::spec::KernelMode::autotune;
    o.trace_ops = ra::trace::OpWindow{0, 2};
    o.algorithm_pins = pins_from(dir.path / (std::string(name) + ".json"));
    traces.push_back(ra::audit::run_audit(pin_spec(), o).trace_files[0]);
  }
  ra::audit::AuditComparisonOptions options;
  options.expect_identical = false;
  const ra::compare::ComparisonResult r = ra::audit::compare_trace_files(traces, options);
  REQUIRE_FALSE(r.identity.identical);
  REQUIRE(r.root_cause.causes.size() == 1);
  const RootCause& c = r.root_cause.causes[0];
  CHECK(c.step == 0);
  CHECK(c.record.op == "conv2d.backward_filter");
  CHECK(c.record.ledger_key == second_conv);
  CHECK(c.cause == RootCause::Class::algorithm_choice);
  REQUIRE(c.algorithms.size() == 2);
  CHECK(c.algorithms[0].algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1");
  CHECK(c.algorithms[0].chosen_by == "pinned-file");
  CHECK(c.algorithms[1].algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT");
  // The replay pins each run's ledger at the op: both outputs appear, the difference is exact.
  REQUIRE(c.magnitude);
  INFO("magnitude note: " << c.magnitude->note);
  CHECK(c.magnitude->note.empty());
  REQUIRE(c.magnitude->runs.size() == 1);
  REQUIRE(c.magnitude->runs[0].outputs.size() == 1);
  CHECK(c.magnitude->runs[0].outputs[0].difference.differing > 0);
  CHECK(c.magnitude->runs[0].outputs[0].difference.max_ulp > 0);
  // The ledgers differ in that one geometry and direction.
  REQUIRE(ra::compare::environment_of(r).ledger.size() == 1);
  CHECK(ra::compare::environment_of(r).ledger[0].layer == second_conv);
  CHECK(ra::compare::environment_of(r).ledger[0].direction == "backward_filter");
}
