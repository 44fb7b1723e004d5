// Root causes on the GPU ([gpu]: each case skips with the reason where no GPU is usable, as on
// every machine of this project's CI): op records of device tensors, and the cuDNN/cuBLAS
// algorithm that the ledger says an op ran, named in the root cause, and the magnitude of its
// output difference, measured by a replay on the device.
#include <catch2/catch.hpp>

#include "backend_cuda/gpu_test_support.h"

#include <nlohmann/json.hpp>
#include <string>

#include "audit/audit.h"
#include "spec/parse.h"
#include "support/op_trace_audit.h"
#include "support/temp_dir.h"

namespace {

using ra::compare::RootCause;
using ra::test::TempDir;
using ra::test::traced_audit;

// Random data (no files needed): two convs, a max-pool, two dense layers.
ra::spec::ExperimentSpec gpu_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "root-cause-gpu", "seed": 11, "device": "cuda",
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

}  // namespace

TEST_CASE("a fault in a cuDNN op's output is localised with the algorithm it ran", "[gpu]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  TempDir dir;
  auto o = traced_audit(dir, 2);
  o.mode = ra::spec::KernelMode::deterministic;
  o.fault = ra::record::FaultSpec{1, 2, "", 5, 30, "conv2d_1/conv2d.backward_filter"};
  const auto r = ra::audit::run_audit(gpu_spec(), o).comparison;
  REQUIRE(r.root_cause.causes.size() == 1);
  const RootCause& c = r.root_cause.causes[0];
  CHECK(c.kind == RootCause::Kind::op);
  CHECK(c.step == 2);
  CHECK(c.record.op == "conv2d.backward_filter");
  CHECK(c.record.ledger_key == "conv 128x32x26x26 k64 3x3 s1 p0");
  INFO("algorithm: " << c.algorithm);
  CHECK(c.algorithm.rfind("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_", 0) == 0);
  CHECK(c.algorithm_deterministic == true);
  // The replay executes the cuDNN op again on the device: the fault is one element, 2^30 ULP.
  REQUIRE(c.magnitude);
  INFO("magnitude note: " << c.magnitude->note);
  REQUIRE(c.magnitude->runs.size() == 1);
  REQUIRE(c.magnitude->runs[0].outputs.size() == 1);
  CHECK(c.magnitude->runs[0].outputs[0].difference.differing == 1);
  CHECK(c.magnitude->runs[0].outputs[0].difference.max_ulp == std::uint64_t(1) << 30);
}

TEST_CASE("nondeterministic GPU runs are localised to a nondeterministic op", "[gpu]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  TempDir dir;
  auto o = traced_audit(dir, 4);
  o.mode = ra::spec::KernelMode::nondeterministic;
  const auto r = ra::audit::run_audit(gpu_spec(), o).comparison;
  if (r.identity.identical) WARN("no race showed in 4 nondeterministic GPU runs of 4 steps");
  for (const RootCause& c : r.root_cause.causes) {
    INFO(c.record.op << " in " << c.record.layer << " at step " << c.step << ": " << c.detail);
    CHECK(c.kind == RootCause::Kind::op);
    CHECK(c.record.mode == "nondeterministic");
    CHECK(c.differing_inputs.empty());
    // Every conv and dense op has its ledger entry: the algorithm or reduction it ran is named.
    if (!c.record.ledger_key.empty()) CHECK_FALSE(c.algorithm.empty());
    // A GPU reduction may have more outcomes than the replay's executions find: a note then.
    REQUIRE(c.magnitude);
    if (!c.magnitude->note.empty()) WARN("magnitude: " << c.magnitude->note);
    for (const RootCause::RunMagnitude& m : c.magnitude->runs) {
      REQUIRE_FALSE(m.outputs.empty());
      CHECK(m.outputs[0].difference.max_ulp >= 1);
    }
  }
}
