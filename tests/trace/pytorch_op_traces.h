#pragma once
// Traces of a PyTorch run with op records (lib/python/repro_audit/op_records.py), built in memory
// with the trace module alone: three typed aten records per step, for the tests of the records'
// types (tests/trace) and of what the comparison says of them (tests/compare).
#include <cstdint>
#include <string>
#include <vector>

#include "trace/in_memory_traces.h"
#include "trace/trace.h"

namespace ra::test {

inline Digest128 aten_digest(std::uint64_t what, std::int64_t step, std::size_t i) {
  return made_up_digest(200 + what, step, i);
}

// Three aten records per step: a random op drawing from the generator, a sum of its output, a
// division by the sum with a Python scalar.
inline std::vector<trace::OpRecord> aten_ops(std::int64_t step) {
  std::vector<trace::OpRecord> ops(3);
  ops[0] = {"aten.bernoulli_.float",
            "model.drop",
            "",
            "",
            {aten_digest(1, step, 0), aten_digest(2, step, 0)},
            {aten_digest(3, step, 0)}};
  ops[0].in_types = {"f32[8,32]", "generator"};
  ops[0].out_types = {"f32[8,32]"};
  ops[1] = {"aten.sum.default",       "model.norm", "", "", {aten_digest(3, step, 0)},
            {aten_digest(4, step, 0)}};
  ops[1].in_types = {"f32[8,32]"};
  ops[1].out_types = {"f32[]"};
  ops[2] = {"aten.div.Tensor",
            "model.norm",
            "",
            "",
            {aten_digest(3, step, 0), aten_digest(4, step, 0), aten_digest(5, step, 0)},
            {aten_digest(6, step, 0)}};
  ops[2].in_types = {"f32[8,32]", "f32[]", "args"};
  ops[2].out_types = {"f32[8,32]"};
  return ops;
}

inline std::vector<trace::Trace> pytorch_runs(int runs) {
  TraceBuilder b;
  std::vector<trace::Trace> out;
  for (int r = 0; r < runs; ++r) {
    trace::Trace t = b.build(r);
    t.header.backend = "pytorch-cpu";
    t.header.format_version = 2;
    t.header.trace_ops = trace::OpWindow{};
    for (auto& s : t.steps) {
      s.ops_recorded = true;
      s.ops = aten_ops(s.step);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// A PyTorch run on the CPU with nothing in the way of identical runs (`repro-audit doctor`'s
// tests): seeded by seed_everything, the determinism switches at their defaults, one addmm
// recorded at step 0.
inline trace::Trace quiet_pytorch_run() {
  trace::Trace t = TraceBuilder{}.build(0);
  t.header.backend = "pytorch-cpu";
  t.header.environment = {{"deterministic_algorithms", false},
                          {"cudnn_benchmark", false},
                          {"cudnn_deterministic", false},
                          {"cublas_workspace_config", nullptr}};
  t.header.seeded = {
      {"seed", 42}, {"rng_states", nlohmann::json::object()}, {"torch_initial_seed", 42}};
  t.steps[0].ops_recorded = true;
  t.steps[0].ops.push_back({"aten.addmm.default", "model.0", "", "", {}, {}});
  return t;
}

}  // namespace ra::test
