#pragma once
// A one-step trace the reader accepts whole, for the tests of tests/trace that edit one record:
// the in-memory builder's trace with its spec digest, epoch mean and median made consistent.
#include <bit>

#include "trace/in_memory_traces.h"
#include "trace/trace_io.h"

namespace ra::test {

inline audit::Trace whole_one_step_trace() {
  TraceBuilder b;
  b.steps = 1;
  b.steps_per_epoch = 1;
  audit::Trace t = b.build(0);
  t.header.spec_digest = audit::spec_digest_of(t.header.spec).hex();
  t.epochs[0].mean_train_loss = std::bit_cast<float>(t.steps[0].loss_bits);
  t.final->median_step_seconds = t.steps[0].seconds;
  t.final->total_seconds = t.steps[0].seconds;
  return t;
}

}  // namespace ra::test
