#pragma once
// Traces built in memory with the trace module alone (no training), for the tests of the trace
// format (tests/trace), of the comparison phases (tests/compare) and of the report (tests/report):
// every value fixed, so a test can say exactly which runs agree, where they first part and by how
// much.
//
// A trace of `steps` steps in epochs of `steps_per_epoch`. Every digest is a function of (what,
// step, parameter) only, so two runs built from one TraceBuilder are bitwise identical; the loss
// of step s is 2.5 - 0.125 s (exact in float). diverge() then changes one run from a step on, the
// way a nondeterministic gradient would.
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"

namespace ra::test {

inline Digest128 made_up_digest(std::uint64_t what, std::int64_t step, std::size_t param) {
  return Digest128{what * 1000003u + static_cast<std::uint64_t>(step + 1),
                   0x5eed0000u + static_cast<std::uint64_t>(param)};
}

// Another digest than `d`, as another run's output of an op would have.
inline Digest128 changed(Digest128 d) {
  return Digest128{d.high ^ 1, d.low};
}

inline std::uint32_t float_bits(float v) {
  return std::bit_cast<std::uint32_t>(v);
}

struct TraceBuilder {
  std::string spec_name = "in-memory";
  std::string mode = "deterministic";
  nlohmann::json mode_ops = nlohmann::json::object();
  std::string seed_group = "same";
  std::uint64_t seed = 42;
  int steps = 4;
  int steps_per_epoch = 2;
  std::vector<std::string> params = {"conv2d_0.weight", "conv2d_0.bias", "dense_1.weight"};
  std::vector<double> eval_accuracy;  // per epoch; empty: no evaluation
  double step_seconds = 0.002;        // the median; steps alternate around it
  double recording_seconds = 0.0001;
  nlohmann::json environment = {{"backend", "cpu"},
                                {"compiler", "g++ 12.2.0"},
                                {"cpu_model", "Test CPU"},
                                {"hostname", "host-a"},
                                {"threads", 2},
                                {"tool_version", "0.test"}};

  trace::Trace build(int run) const {
    trace::Trace t;
    t.source = "run-00" + std::to_string(run) + ".trace.jsonl";
    trace::TraceHeader& h = t.header;
    h.tool_version = "0.test";
    h.spec = {{"name", spec_name}, {"seed", 42}};
    h.spec_digest = "0123456789abcdef0123456789abcdef";
    h.run_index = run;
    h.seed_group = seed_group;
    h.seed_init = h.seed_data = h.seed_dropout = seed;
    h.backend = "cpu";
    h.threads = 2;
    h.determinism = {{"mode", mode}, {"ops", mode_ops}};
    h.environment = environment;
    for (const std::string& p : params) h.params.push_back({p, Shape{2, 3}});
    h.optimizer_state = {"velocity"};
    const std::uint64_t seeded = seed == 42 ? 0 : seed * 7919;  // other seeds: other digests
    for (std::size_t p = 0; p < params.size(); ++p)
      t.initial_weights.push_back(made_up_digest(1 + seeded, -1, p));
    for (int s = 0; s < steps; ++s) {
      trace::StepRecord r;
      r.step = s;
      r.epoch = s / steps_per_epoch;
      r.batch = s % steps_per_epoch;
      r.batch_indices = made_up_digest(2 + seeded, s, 0);
      r.batch_inputs = made_up_digest(3 + seeded, s, 0);
      r.batch_labels = made_up_digest(4 + seeded, s, 0);
      r.loss_bits = float_bits(2.5f - 0.125f * static_cast<float>(s) +
                               (seeded ? 0.0625f * static_cast<float>(seed % 7) : 0.0f));
      for (std::size_t p = 0; p < params.size(); ++p) {
        r.grads.push_back(made_up_digest(5 + seeded, s, p));
        r.weights.push_back(made_up_digest(6 + seeded, s, p));
      }
      r.optimizer_state = made_up_digest(7 + seeded, s, 0);
      r.seconds = step_seconds + (s % 2 ? 0.0001 : -0.0001);
      t.steps.push_back(r);
    }
    const int epochs = (steps + steps_per_epoch - 1) / steps_per_epoch;
    for (int e = 0; e < epochs; ++e) {
      trace::EpochRecord rec;
      rec.epoch = e;
      rec.steps = std::min(steps_per_epoch, steps - e * steps_per_epoch);
      if (e < static_cast<int>(eval_accuracy.size())) rec.eval_accuracy = eval_accuracy[e];
      t.epochs.push_back(rec);
    }
    trace::FinalRecord f;
    f.steps = steps;
    f.final_loss_bits = steps ? t.steps.back().loss_bits : float_bits(2.5f);
    f.eval_accuracy = t.epochs.empty() ? std::nullopt : t.epochs.back().eval_accuracy;
    f.median_step_seconds = step_seconds;
    f.total_seconds = step_seconds * steps;
    f.recording_seconds = recording_seconds;
    f.weights = steps ? t.steps.back().weights : t.initial_weights;
    t.final = f;
    return t;
  }
};

// What a nondeterministic gradient of parameter `param` at step `step` does to a run: that
// gradient, the parameter's updated weights and the optimizer state differ from `step` on; from
// the next step every loss (by `loss_ulp_per_step` ulp more each step), gradient and weight does.
inline void diverge(trace::Trace& t, std::int64_t step, std::size_t param,
                    std::uint32_t loss_ulp_per_step = 3) {
  const auto changed = [](Digest128 d) { return Digest128{d.high, d.low ^ 0xd1ff0000u}; };
  for (trace::StepRecord& r : t.steps) {
    if (r.step < step) continue;
    const bool later = r.step > step;
    for (std::size_t p = 0; p < r.grads.size(); ++p) {
      if (p == param || later) {
        r.grads[p] = changed(r.grads[p]);
        r.weights[p] = changed(r.weights[p]);
      }
    }
    r.optimizer_state = changed(r.optimizer_state);
    if (later) r.loss_bits += loss_ulp_per_step * static_cast<std::uint32_t>(r.step - step);
  }
  if (!t.steps.empty()) {
    t.final->final_loss_bits = t.steps.back().loss_bits;
    t.final->weights = t.steps.back().weights;
  }
}

// Runs 0 .. n-1 of the builder's audit.
inline std::vector<trace::Trace> runs_of(const TraceBuilder& b, int n) {
  std::vector<trace::Trace> traces;
  for (int i = 0; i < n; ++i) traces.push_back(b.build(i));
  return traces;
}

}  // namespace ra::test
