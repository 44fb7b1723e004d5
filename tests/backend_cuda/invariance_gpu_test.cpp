// The engine's batch-invariance sweep (audit/engine_invariance.h) on the GPU ([gpu]: skips, saying
// why, where no GPU is usable, as on every machine of this project's CI): in batch_invariant mode
// (fixed cuDNN algorithms, the fixed-order dense kernels; backend/cuda/algorithm_policy.h) the
// anchor's output is the anchor alone's at every size 1-64 and position, and the control is seen.
// Deterministic mode runs cuBLAS and cuDNN's heuristic, which choose by the whole shape: how many
// probes that changes is reported (WARN), not required, as it is cuBLAS's and cuDNN's choice on
// the GPU at hand. Not run yet: no GPU has been lent to a session since it was written.
#include <catch2/catch.hpp>

#include "backend_cuda/gpu_test_support.h"

#include <string>
#include <vector>

#include "audit/engine_invariance.h"
#include "compare/invariance_check.h"
#include "spec/parse.h"
#include "trace/invariance.h"

namespace {

ra::spec::ExperimentSpec quick_on_gpu() {
  ra::spec::ExperimentSpec spec =
      ra::spec::load_spec(std::string(REPRO_AUDIT_SOURCE_DIR) + "/configs/quick.json");
  spec.device = ra::spec::Device::cuda;
  return spec;
}

ra::trace::InvariancePlan sizes_1_to_64() {
  ra::trace::InvariancePlan plan;
  for (int s = 1; s <= 64; ++s) plan.sizes.push_back(s);
  return plan;
}

}  // namespace

TEST_CASE("invariance sweep on the GPU: batch_invariant mode passes and sees its control",
          "[gpu][invariance]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  ra::audit::EngineSweepOptions options;
  options.mode = ra::spec::KernelMode::batch_invariant;
  const ra::trace::InvarianceSweep sweep =
      ra::audit::engine_invariance_sweep(quick_on_gpu(), sizes_1_to_64(), options);
  CHECK(sweep.device == "cuda:0");
  CHECK(sweep.mode == "batch_invariant");
  const ra::compare::InvarianceAnalysis analysis = ra::compare::analyse_invariance(sweep);
  for (const ra::compare::ProbeOutcome& p : analysis.probes) {
    INFO("batch " << p.config.batch_size << ", row " << p.config.anchor_row);
    CHECK(p.equal);
  }
  CHECK(analysis.invariant);
  CHECK(analysis.control.ran);
  CHECK(analysis.control.detected);
  CHECK(analysis.control.reached_output);
}

TEST_CASE("invariance sweep on the GPU: what deterministic mode's library choices change",
          "[gpu][invariance]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  ra::audit::EngineSweepOptions options;
  options.mode = ra::spec::KernelMode::deterministic;
  const ra::trace::InvarianceSweep sweep =
      ra::audit::engine_invariance_sweep(quick_on_gpu(), sizes_1_to_64(), options);
  const ra::compare::InvarianceAnalysis analysis = ra::compare::analyse_invariance(sweep);
  int differing = 0;
  for (const ra::compare::ProbeOutcome& p : analysis.probes) differing += p.equal ? 0 : 1;
  std::string first = "none";
  if (analysis.first_failing) {
    const ra::compare::ProbeOutcome& p = analysis.probes[*analysis.first_failing];
    first = "batch " + std::to_string(p.config.batch_size);
    if (p.first_break) first += ", " + p.first_break->op + " in " + p.first_break->module;
  }
  WARN("deterministic mode on the GPU: " << differing << " of " << analysis.probes.size()
                                         << " probes differ from the anchor alone; first: "
                                         << first);
  CHECK(analysis.control.detected);
}
