#pragma once
// Whole traces for the tests of tests/trace (and of the modules above it) that read files or edit
// records: the in-memory builder's traces with every value the reader checks made consistent, so
// that the reader accepts them whole, built with the trace module alone (no training).
#include <catch2/catch.hpp>

#include <bit>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/statistics.h"
#include "trace/in_memory_traces.h"
#include "trace/trace_io.h"

namespace ra::test {

// What the reader checks of a whole trace, made true of `t`: the spec digest, each epoch's mean
// train loss (the step losses summed as the trainer sums them) and the median step time.
inline void make_whole(trace::Trace& t) {
  t.header.spec_digest = trace::spec_digest_of(t.header.spec).hex();
  std::vector<double> seconds;
  for (trace::EpochRecord& e : t.epochs) {
    double sum = 0;
    for (const trace::StepRecord& s : t.steps) {
      if (s.epoch == e.epoch) sum += std::bit_cast<float>(s.loss_bits);
    }
    e.mean_train_loss = sum / static_cast<double>(e.steps);
  }
  for (const trace::StepRecord& s : t.steps) seconds.push_back(s.seconds);
  t.final->median_step_seconds = median(seconds);
}

inline trace::Trace whole_one_step_trace() {
  TraceBuilder b;
  b.steps = 1;
  b.steps_per_epoch = 1;
  trace::Trace t = b.build(0);
  make_whole(t);
  t.final->total_seconds = t.steps[0].seconds;
  return t;
}

// Run `run` of an audit `audit_id` as the engine writes it (format version 1) for a small convnet
// trained with Adam for 2 epochs of 3 steps with an eval set: lines 1 header, 2 init, 3-5 steps,
// 6 epoch 0, 7-9 steps, 10 epoch 1, 11 end; 4 parameters. The runs of one audit are bitwise
// identical; only their step times (`step_seconds`, the median) differ, as real runs' do.
inline trace::Trace two_epoch_trace(int run, const std::string& audit_id, double step_seconds) {
  TraceBuilder b;
  b.spec_name = "trace-validation";
  b.steps = 6;
  b.steps_per_epoch = 3;
  b.params = {"conv2d_0.weight", "conv2d_0.bias", "dense_0.weight", "dense_0.bias"};
  b.eval_accuracy = {0.375, 0.4375};
  b.step_seconds = step_seconds;
  trace::Trace t = b.build(run);
  t.header.format_version = 1;
  t.header.audit_id = audit_id;
  t.header.optimizer_state.clear();
  for (const std::string& p : b.params) {
    t.header.optimizer_state.push_back(p + ".exp_avg");
    t.header.optimizer_state.push_back(p + ".exp_avg_sq");
  }
  t.epochs[0].eval_loss = 1.125;
  t.epochs[1].eval_loss = 1.0625;
  t.final->eval_loss = t.epochs[1].eval_loss;
  make_whole(t);
  return t;
}

inline void write_trace_file(const trace::Trace& t, const std::filesystem::path& file) {
  std::ofstream(file, std::ios::binary) << trace::serialize_trace(t);
}

// `t` as the writer writes it, its first `from` replaced by `to`: a damaged record for the
// reader's tests. The text must hold `from`.
inline std::string text_with_replaced(const trace::Trace& t, const std::string& from,
                                      const std::string& to) {
  std::string text = trace::serialize_trace(t);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace ra::test
