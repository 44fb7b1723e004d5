#pragma once
// What a run records besides its trace (snapshots), and the test-only fault it may inject: the
// options of the observers of record/run_observers.h, set by the audit (audit/audit_options.h).
#include <cstdint>
#include <optional>
#include <string>

namespace ra::record {

// Test-only fault injection: flip one bit of one element of a tensor in one run at one step, or
// swap two samples of that step's batch. Documented in docs/trace-format.md as a test facility.
struct FaultSpec {
  int run = 0;
  std::int64_t step = 0;
  std::string tensor;        // a parameter name, or "batch" to swap samples 0 and 1 of the batch
  std::int64_t element = 0;  // element of the parameter
  int bit = 0;               // 0 = the lowest mantissa bit
  // Or, instead of a tensor, "LAYER/OP" ("dense_0/dense.forward"): a bit of the first output of
  // that op's first execution in the step, flipped right after it ran (needs --trace-ops).
  std::string op;
};

struct SnapshotOptions {
  bool epochs = false;           // weights after every epoch
  std::int64_t every_steps = 0;  // weights after every N-th step (0 = none)
  bool batches = false;          // the sample indices of every batch (batches.json)
  // Whether a writer thread writes the snapshots while the run trains on (record/run_observers.h).
  // Unset: where the weights live in device memory (the host thread mostly waits for the device),
  // not where they live in host memory (the CPU backend's threads take every core: a writer thread
  // beside them made the step 1.14x as long, docs/performance.md). Tests set it both ways.
  std::optional<bool> write_behind;
};

}  // namespace ra::record
