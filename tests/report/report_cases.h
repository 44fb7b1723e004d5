#pragma once
// Comparisons the report tests share: runs of a PyTorch script resumed from its checkpoint, runs
// of a data-parallel exec audit, and three seed groups with a perturbed one, built in memory
// (trace/in_memory_traces.h).
#include <cstdint>
#include <string>
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

// Two runs a group; the perturbed runs flipped a bit of dense_1.weight; eval accuracies and
// predictions chosen so that every group spreads.
// With `start_differs`, run 5's initial weights also differ where no bit was flipped (a warning).
inline compare::ComparisonResult three_groups(const std::string& backend = "cpu",
                                              bool predictions = true, bool start_differs = false) {
  TraceBuilder same;
  same.eval_accuracy = {0.5, 0.75};
  TraceBuilder different = same;
  different.seed_group = "different";
  different.seed = 7;
  TraceBuilder perturbed = same;
  perturbed.seed_group = "perturbed";
  std::vector<trace::Trace> traces = {same.build(0),      same.build(1),      different.build(2),
                                      different.build(3), perturbed.build(4), perturbed.build(5)};
  const double accuracy[] = {0.75, 0.76, 0.70, 0.80, 0.74, 0.77};
  for (std::size_t i = 0; i < traces.size(); ++i) traces[i].final->eval_accuracy = accuracy[i];
  for (int i : {4, 5}) {
    traces[i].header.perturbation = trace::Perturbation{"dense_1.weight", i, 0, 2, 3};
    traces[i].initial_weights[2] = changed(traces[i].initial_weights[2]);
  }
  if (start_differs) traces[5].initial_weights[0] = changed(traces[5].initial_weights[0]);
  for (trace::Trace& t : traces) t.header.backend = backend;
  compare::ComparisonOptions options;
  if (!predictions) return compare::compare_traces(traces, options);
  options.load_predictions = [](int run) -> std::optional<std::vector<std::int64_t>> {
    const std::vector<std::int64_t> classes[] = {{0, 1, 2, 3}, {0, 1, 2, 1}, {0, 0, 0, 3},
                                                 {1, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 1, 3}};
    return classes[run];
  };
  return compare::compare_traces(traces, options);
}

}  // namespace ra::test
