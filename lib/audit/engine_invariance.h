#pragma once
// The engine's batch-invariance sweep (docs/invariance.md, "The engine's batch-invariant mode";
// the file it becomes: trace/invariance.h). The spec's model with the initial weights of a run
// of the spec (seeded as run 0's: the spec's seed), in evaluation (no dropout), runs its forward
// pass on batches of every size of the plan, the anchor at every position of the plan, the
// other rows filled from the spec's data ("batch"): the first samples a run of the spec would
// draw (epoch 0's order), the anchor the first of them, the others after it in that order. Each
// probe records, op by op, the digests of the anchor's row of the op's inputs and output
// (record/invariance_recorder.h), and the anchor's row of the model's output: its float32 values
// and their digest as a tensor of one sample's output shape ([10], not [1, 10]).
//
// The reference is the batch of one (the anchor alone); the probes follow it, each size above 1
// with each position (where two positions name one row of a small batch, the first named runs).
// With plan.control, one more probe, last, the control: the first probe's configuration again,
// with the anchor's row of the first conv2d or dense forward product moved by one ULP
// (record/invariance_recorder.h), as the PyTorch recorder repeats its first probe; the sweep's
// `control` names that op. None runs (control null) when the plan has no size above 1 or the
// model no such op.
#include <functional>
#include <memory>
#include <optional>

#include "backend/ops.h"
#include "spec/spec.h"
#include "trace/invariance.h"

namespace ra::audit {

struct EngineSweepOptions {
  std::optional<int> threads;            // overrides spec.threads (0 there: every core)
  std::optional<spec::KernelMode> mode;  // replaces the spec's whole determinism policy
  // Builds the backend for a thread count (tests: a decorator that makes one op depend on the
  // batch); default: by the spec's device, as a run's backend is.
  std::function<std::unique_ptr<backend::Ops>(int threads)> make_backend;
};

// InputError, before any forward pass, for a plan the engine cannot run: no sizes, a size below
// 1, sizes not ascending and distinct, an unknown position, neighbours other than "batch" (the
// only filling the engine has), or a largest size above the training set's sample count.
trace::InvarianceSweep engine_invariance_sweep(const spec::ExperimentSpec& spec,
                                               const trace::InvariancePlan& plan,
                                               const EngineSweepOptions& options = {});

}  // namespace ra::audit
