#pragma once
// Comparisons the report tests share: runs of a PyTorch script resumed from its checkpoint, and
// runs of a data-parallel exec audit, built in memory (trace/in_memory_traces.h).
#include <cstdint>
#include <vector>

#include "compare/compare.h"
#include "trace/in_memory_traces.h"

namespace ra::test {

// The state a run recorded at its save point `step` (a resumed run's after its restore).
inline trace::ResumePoint resume_point(std::int64_t step, bool resumed) {
  trace::ResumePoint p;
  p.step = step;
  p.resumed = resumed;
  p.state.weights = made_up_digest(40, step, 0);
  p.state.optimizer_state = made_up_digest(41, step, 0);
  p.state.schedule = made_up_digest(42, step, 0);
  p.state.rng_streams = {{"torch", made_up_digest(45, step, 0)}};
  p.state.next_batch = made_up_digest(46, step, 0);
  return p;
}

// Two PyTorch runs, run 1 stopped after step 2 and resumed from the script's checkpoint.
inline std::vector<trace::Trace> resumed_runs(const trace::ResumePoint& resumed) {
  TraceBuilder b;
  std::vector<trace::Trace> traces{b.build(0), b.build(1)};
  for (trace::Trace& t : traces) t.header.backend = "pytorch-cpu";
  traces[0].resume_points = {resume_point(2, false)};
  traces[1].resume_points = {resumed};
  return traces;
}

// Run `run` of a data-parallel exec audit whose command is `command`: its spec digest.
inline trace::Trace exec_run(int run, int world, char command) {
  trace::Trace t = TraceBuilder{}.build(run);
  t.header.backend = "pytorch-cpu";
  t.header.spec = {{"name", "ddp_train"}, {"source", "pytorch"}};
  t.header.spec_digest = std::string(32, command);
  if (world > 1) t.header.distributed = trace::RankPlacement{0, world, "gloo", {}};
  return t;
}

inline compare::ComparisonOptions expect_identity() {
  compare::ComparisonOptions o;
  o.expect_identical = true;
  return o;
}

}  // namespace ra::test
