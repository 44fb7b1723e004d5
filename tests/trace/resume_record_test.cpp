// The resume record (trace/resume_record.h, docs/trace-format.md "resume"): written before the
// step it describes, read back field for field, refused where it names another step; a trace
// without one reads as before.
#include <catch2/catch.hpp>

#include <bit>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "trace/test_header.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;
using nlohmann::json;
using namespace ra::trace;

namespace {

ra::Digest128 resume_digest(std::uint64_t n) {
  return ra::Digest128{n, 0x4e5u};
}

// One epoch of three steps of one parameter.
Trace three_steps() {
  Trace t;
  t.header = ra::test::test_header("resume", kTraceFormatVersion);
  TraceHeader& h = t.header;
  h.params = {{"w", {2}, "f32"}};
  h.optimizer_state = {"w.momentum"};
  t.initial_weights = {resume_digest(1)};
  double sum = 0;
  for (std::int64_t s = 0; s < 3; ++s) {
    StepRecord r;
    r.step = s;
    r.batch = s;
    r.loss_bits = 0x3f800000u;
    sum += 1.0;
    r.grads = {resume_digest(10 + s)};
    r.weights = {resume_digest(20 + s)};
    r.seconds = 0.5;
    t.steps.push_back(r);
  }
  t.epochs.push_back({0, 3, sum / 3, std::nullopt, std::nullopt, 1.0});
  FinalRecord f;
  f.steps = 3;
  f.final_loss_bits = 0x3f800000u;
  f.median_step_seconds = 0.5;
  f.weights = t.steps.back().weights;
  t.final = f;
  return t;
}

ResumePoint point(std::int64_t step, bool resumed) {
  ResumePoint p;
  p.step = step;
  p.resumed = resumed;
  p.state = {
      .weights = resume_digest(30),
      .optimizer_state = resume_digest(31),
      .schedule = resume_digest(32),
      .rng_streams = {{"data/order", resume_digest(33)}, {"dropout/dropout_0", resume_digest(34)}},
      .next_batch = resume_digest(35),
      .buffers = std::nullopt,
      .lr_scheduler = std::nullopt,
      .grad_scaler = std::nullopt};
  if (resumed) {
    p.checkpoint_bytes = 4096;
    p.write_seconds = 0.002;
    p.read_seconds = 0.001;
  }
  return p;
}

}  // namespace

TEST_CASE("resume records are written before their step and read back whole", "[trace]") {
  Trace t = three_steps();
  t.resume_points = {point(1, true), point(2, false)};
  const std::string text = serialize_trace(t);
  const Trace back = parse_trace(text, "t.jsonl");
  REQUIRE(back.resume_points.size() == 2);
  const ResumePoint& r = back.resume_points[0];
  REQUIRE(r.step == 1);
  REQUIRE(r.resumed);
  REQUIRE(r.state == t.resume_points[0].state);
  REQUIRE(r.checkpoint_bytes == 4096);
  REQUIRE(r.write_seconds == 0.002);
  REQUIRE_FALSE(back.resume_points[1].resumed);
  // Between step 0's record and step 1's: line 4 (header, init, step 0).
  REQUIRE(text.find("\"record\":\"resume\"") > text.find("\"step\":0"));
  REQUIRE(back.steps.size() == 3);
}

TEST_CASE("a resume record that names another step than the next is refused", "[trace]") {
  Trace t = three_steps();
  t.resume_points = {point(1, true)};
  std::string text = serialize_trace(t);
  const auto line_start = text.find("{\"checkpoint\"");
  REQUIRE(line_start != std::string::npos);
  const auto at = text.find("\"step\":1", line_start);
  text.replace(at, 8, "\"step\":2");
  REQUIRE_THROWS_WITH(
      parse_trace(text, "t.jsonl"),
      Contains("t.jsonl:4: field 'step': a resume record before step 1 says step 2"));
}

TEST_CASE("a repeated resume record is refused, not judged twice", "[trace]") {
  // Issue 61: a trace with a resume record given twice was read, and its resume reported twice.
  Trace t = three_steps();
  t.resume_points = {point(1, true)};
  std::string text = serialize_trace(t);
  const auto line_start = text.find("{\"checkpoint\"");
  const auto line_end = text.find('\n', line_start);
  text.insert(line_end + 1, text.substr(line_start, line_end + 1 - line_start));
  REQUIRE_THROWS_WITH(parse_trace(text, "t.jsonl"),
                      Contains("t.jsonl:5: field 'step': a second resume record before step 1"));
}

TEST_CASE("a trace without resume records reads as before", "[trace]") {
  const Trace back = parse_trace(serialize_trace(three_steps()), "t.jsonl");
  REQUIRE(back.resume_points.empty());
}

TEST_CASE("a script's optional pieces are written and read back and absent ones stay absent",
          "[trace]") {
  Trace t = three_steps();
  ResumePoint p = point(1, true);
  p.state.buffers = resume_digest(36);
  p.state.lr_scheduler = resume_digest(37);
  t.resume_points = {p, point(2, false)};
  const std::string text = serialize_trace(t);
  REQUIRE(text.find("\"grad_scaler\"") == std::string::npos);
  const Trace back = parse_trace(text, "t.jsonl");
  REQUIRE(back.resume_points[0].state == p.state);
  REQUIRE_FALSE(back.resume_points[1].state.buffers);
}

TEST_CASE("a script's save point after its --interrupt-at step is read back, untimed", "[trace]") {
  Trace t = three_steps();
  ResumePoint resumed = point(2, true);
  resumed.interrupt_at = 1;  // the script's first save at or after step 1: after step 2
  resumed.write_seconds.reset();
  resumed.read_seconds.reset();
  ResumePoint passed = point(2, false);
  passed.interrupt_at = 1;
  t.resume_points = {passed, resumed};
  const std::string text = serialize_trace(t);
  REQUIRE(text.find("\"write_seconds\"") == std::string::npos);
  const Trace back = parse_trace(text, "t.jsonl");
  REQUIRE(back.resume_points.size() == 2);
  for (const ResumePoint& p : back.resume_points) REQUIRE(p.interrupt_at == 1);
  REQUIRE(back.resume_points[1].checkpoint_bytes == 4096);
  REQUIRE_FALSE(back.resume_points[1].write_seconds);
  REQUIRE_FALSE(back.resume_points[1].read_seconds);
  // Without the field (the engine's records): the point serves its own step.
  const Trace engine = parse_trace(serialize_trace([] {
                                     Trace e = three_steps();
                                     e.resume_points = {point(1, true)};
                                     return e;
                                   }()),
                                   "e.jsonl");
  REQUIRE(engine.resume_points[0].interrupt_at == 1);
  REQUIRE(engine.resume_points[0].write_seconds == 0.002);
}

TEST_CASE("a resume record serving a step after its own is refused", "[trace]") {
  Trace t = three_steps();
  ResumePoint p = point(1, false);
  p.interrupt_at = 2;
  t.resume_points = {p};
  REQUIRE_THROWS_WITH(parse_trace(serialize_trace(t), "t.jsonl"),
                      Contains("field 'interrupt_at'") && Contains("1 to the record's step"));
}
