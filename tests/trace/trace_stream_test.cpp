// Traces written and read a record at a time (trace/trace_file_writer.h, trace/trace_reader.h,
// docs/trace-format.md "Streamed traces"): a streamed file is byte for byte the trace serialised
// whole; a run that does not end leaves a partial trace readable to its last step; the reader
// walks steps one at a time, through gzip too, with the checks of the whole-file reader.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "support/temp_dir.h"
#include "trace/test_header.h"
#include "trace/trace_file_writer.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

using Catch::Matchers::Contains;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using namespace ra::trace;

ra::Digest128 stream_digest(std::uint64_t n) {
  return ra::Digest128{n, 0x57ea3u};
}

// A run of `epochs` x `steps_per_epoch` steps of two parameters; version 3 (with a buffer and a
// failed end) when `v3`.
Trace sample_trace(int epochs, int steps_per_epoch, bool v3) {
  Trace t;
  t.header =
      ra::test::test_header("stream", v3 ? kTraceFormatVersionWithStatus : kTraceFormatVersion);
  TraceHeader& h = t.header;
  h.params = {{"w", {2, 3}, "f32"}, {"b", {3}, "f32"}};
  if (v3) h.buffers = {{"bn.running_mean", {3}, "f32"}};
  h.optimizer_state = {"w.momentum", "b.momentum"};
  t.initial_weights = {stream_digest(1), stream_digest(2)};
  if (v3) t.initial_buffers = {stream_digest(3)};
  std::int64_t step = 0;
  for (int e = 0; e < epochs; ++e) {
    double sum = 0;
    for (int b = 0; b < steps_per_epoch; ++b, ++step) {
      StepRecord r;
      r.step = step;
      r.epoch = e;
      r.batch = b;
      r.loss_bits = 0x3f800000u + static_cast<std::uint32_t>(step);
      sum += std::bit_cast<float>(r.loss_bits);
      r.grads = {stream_digest(100 + step), stream_digest(200 + step)};
      r.weights = {stream_digest(300 + step), stream_digest(400 + step)};
      if (v3) r.buffers = {stream_digest(500 + step)};
      r.seconds = 0.25 * static_cast<double>(step % 3 + 1);
      t.steps.push_back(r);
    }
    t.epochs.push_back(
        {e, steps_per_epoch, sum / steps_per_epoch, std::nullopt, std::nullopt, 1.0});
  }
  FinalRecord f;
  if (v3) {
    f.status = RunStatus::failed;
    f.error = "KeyboardInterrupt";
  }
  f.steps = step;
  f.final_loss_bits = t.steps.back().loss_bits;
  std::vector<double> seconds;
  for (const StepRecord& r : t.steps) seconds.push_back(r.seconds);
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  f.median_step_seconds = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  f.weights = t.steps.back().weights;
  f.buffers = t.steps.back().buffers;
  t.final = f;
  return t;
}

// Streams `t` through a writer, epoch records after their epoch's last step, as a run does.
void stream_steps(TraceFileWriter& w, const Trace& t) {
  w.start(t.header, t.initial_weights, t.initial_buffers);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    w.step(t.steps[i]);
    if (i + 1 == t.steps.size() || t.steps[i + 1].epoch != t.steps[i].epoch) {
      w.epoch(t.epochs[static_cast<std::size_t>(t.steps[i].epoch)]);
    }
  }
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("a trace streamed record by record is byte for byte the trace serialised whole") {
  ra::test::TempDir dir;
  for (const bool v3 : {false, true}) {
    const Trace t = sample_trace(3, 4, v3);
    const fs::path path = dir.path / (v3 ? "v3.trace.jsonl" : "v1.trace.jsonl");
    TraceFileWriter w(path);
    stream_steps(w, t);
    CHECK_FALSE(fs::exists(path));  // not under its name before the end
    w.finish(t.header, *t.final);
    CHECK(file_text(path) == serialize_trace(t));
    CHECK(read_trace(path).steps.size() == 12);
  }
  CHECK(files_in(dir.path).size() == 2);  // no temporary left behind
}

TEST_CASE("a header that changed by the run's end is written anew in front of the records") {
  ra::test::TempDir dir;
  Trace t = sample_trace(2, 3, false);
  const fs::path path = dir.path / "run-000.trace.jsonl";
  TraceFileWriter w(path);
  stream_steps(w, t);
  // An autotuned algorithm chosen at the last epoch's evaluation: the ledger is complete only now.
  t.header.ledger = json::array({{{"layer", "conv 8x1x28x28 k4 3x3 s1 p0"},
                                  {"direction", "forward"},
                                  {"algorithm", "CUDNN_CONVOLUTION_FWD_ALGO_GEMM"},
                                  {"deterministic", true},
                                  {"math_type", "CUDNN_FMA_MATH"},
                                  {"workspace_bytes", 0},
                                  {"chosen_by", "autotuned"}}});
  w.finish(t.header, *t.final);
  CHECK(file_text(path) == serialize_trace(t));
  CHECK(read_trace(path).header.ledger.size() == 1);
  CHECK(files_in(dir.path).size() == 1);
}

TEST_CASE("a run that does not end leaves its partial trace, read to its last step") {
  ra::test::TempDir dir;
  const Trace t = sample_trace(2, 5, false);
  const fs::path path = dir.path / "run-001.trace.jsonl";
  {
    TraceFileWriter w(path);
    w.start(t.header, t.initial_weights, t.initial_buffers);
    for (int s = 0; s < 7; ++s) {
      w.step(t.steps[static_cast<std::size_t>(s)]);
      if (s == 4) w.epoch(t.epochs[0]);
    }
  }  // the run's exception: no finish
  CHECK_FALSE(fs::exists(path));
  const std::vector<fs::path> left = files_in(dir.path);
  REQUIRE(left.size() == 1);
  CHECK_THAT(left[0].filename().string(), Contains("run-001.trace.jsonl.tmp-"));
  const PartialTrace partial = read_partial_trace(left[0]);
  CHECK(partial.steps == 7);
  CHECK_FALSE(partial.final);
  CHECK(partial.cut_off.empty());
  CHECK(partial.header.params.size() == 2);
  CHECK_THROWS_WITH(read_trace(left[0]), Contains("trace is truncated"));
}

TEST_CASE("a partial trace cut off inside a line ends at its last whole record") {
  ra::test::TempDir dir;
  const std::string text = serialize_trace(sample_trace(1, 6, true));
  // Cut in the middle of the 5th step record (line 7), as a write buffer flushed at a kill does.
  std::size_t at = 0;
  for (int line = 0; line < 6; ++line) at = text.find('\n', at) + 1;
  const fs::path path = dir.path / "run-000.trace.jsonl.tmp-1-0";
  std::ofstream(path, std::ios::binary) << text.substr(0, at + 40);
  const PartialTrace partial = read_partial_trace(path);
  CHECK(partial.steps == 4);
  CHECK_THAT(partial.cut_off, Contains("line 7"));
  CHECK_THROWS_AS(read_trace(path), ra::InputError);
  // A damaged record before the cut is still an error, partial or not.
  std::string damaged = text.substr(0, at + 40);
  damaged.replace(damaged.find("\"step\":1"), 8, "\"step\":9");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
  CHECK_THROWS_WITH(read_partial_trace(path), Contains("out of order"));
}

TEST_CASE("the trace reader walks the steps one at a time, gzip-compressed or not") {
  ra::test::TempDir dir;
  const Trace t = sample_trace(3, 5, false);
  const std::string text = serialize_trace(t);
  const fs::path gz = dir.path / "run-000.trace.jsonl";
  gzFile out = gzopen(gz.c_str(), "wb");
  REQUIRE(out != nullptr);
  REQUIRE(gzwrite(out, text.data(), static_cast<unsigned>(text.size())) ==
          static_cast<int>(text.size()));
  REQUIRE(gzclose(out) == Z_OK);

  TraceReader reader(gz);
  CHECK(reader.header().params.size() == 2);
  StepRecord s;
  std::int64_t expected = 0;
  while (reader.next_step(s)) {
    CHECK(s.step == expected);
    CHECK(s.weights == t.steps[static_cast<std::size_t>(expected)].weights);
    CHECK(reader.epochs().size() == static_cast<std::size_t>(expected / 5));  // so far
    ++expected;
  }
  CHECK(expected == 15);
  CHECK(reader.epochs().size() == 3);
  REQUIRE(reader.final());
  CHECK(reader.final()->steps == 15);
  CHECK(serialize_trace(read_trace(gz)) == text);
}

TEST_CASE("a streamed trace's end record is still checked against every step before it") {
  Trace t = sample_trace(2, 3, false);
  t.final->median_step_seconds = 9.0;
  const std::string text = serialize_trace(t);
  TraceReader reader(text, "run-000.trace.jsonl");
  StepRecord s;
  int steps = 0;
  CHECK_THROWS_WITH(
      [&] {
        while (reader.next_step(s)) ++steps;
      }(),
      Contains("median of the 6 step times"));
  CHECK(steps == 6);  // every step was handed out before the end record was found wrong
}
