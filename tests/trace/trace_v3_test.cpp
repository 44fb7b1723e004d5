// Version 3 of the trace format (the PyTorch recorder's, docs/trace-format.md "Version 3"): the
// end record's status, parameters and buffers of any dtype and rank, buffers per step; written by
// serialize_trace and read back whole, and every field checked.
#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

using namespace ra::trace;

ra::Digest128 v3_digest(std::uint64_t n) {
  return ra::Digest128{n, 0xb0ffe5u};
}

// A failed run of version 3: a 0-dim, an empty and a bf16 parameter, two buffers, two steps.
Trace v3_trace() {
  Trace t;
  TraceHeader& h = t.header;
  h.format_version = kTraceFormatVersionWithStatus;
  h.tool_version = "repro_audit-python test";
  h.spec = {{"name", "v3"}, {"source", "pytorch"}};
  h.spec_digest = spec_digest_of(h.spec).hex();
  h.seed_group = "same";
  h.seed_init = h.seed_data = h.seed_dropout = 18446744073709551615u;
  h.backend = "pytorch-cpu";
  h.threads = 1;
  h.determinism = {{"mode", "nondeterministic"}, {"ops", json::object()}};
  h.environment = json::object();
  h.fault = nullptr;
  h.params = {{"temperature", {}, "f32"}, {"empty", {0, 4}, "f32"}, {"half", {2}, "bf16"}};
  h.buffers = {{"bn.running_mean", {3}, "f32"}, {"bn.num_batches_tracked", {}, "i64"}};
  t.initial_weights = {v3_digest(1), v3_digest(2), v3_digest(3)};
  t.initial_buffers = {v3_digest(4), v3_digest(5)};
  for (int s = 0; s < 2; ++s) {
    StepRecord r;
    r.step = s;
    r.batch = s;
    r.loss_bits = s == 0 ? 0x3fc00000u : 0x7fc00000u;  // 1.5, then NaN
    r.grads = r.weights = {v3_digest(10 + s), v3_digest(20 + s), v3_digest(30 + s)};
    r.buffers = {v3_digest(40 + s), v3_digest(50 + s)};
    t.steps.push_back(r);
  }
  EpochRecord e;
  e.steps = 2;
  e.mean_train_loss = std::numeric_limits<double>::quiet_NaN();
  t.epochs.push_back(e);
  FinalRecord f;
  f.status = RunStatus::failed;
  f.error = "ZeroDivisionError";
  f.steps = 2;
  f.final_loss_bits = t.steps.back().loss_bits;
  f.weights = t.steps.back().weights;
  f.buffers = t.steps.back().buffers;
  t.final = f;
  return t;
}

// The trace's text with line `line` (0-based) edited.
std::string with_line_edited(const std::string& text, std::size_t line,
                             const std::function<void(json&)>& f) {
  std::string out;
  std::size_t begin = 0;
  for (std::size_t i = 0; begin < text.size(); ++i) {
    const std::size_t end = text.find('\n', begin);
    json record = json::parse(text.substr(begin, end - begin));
    if (i == line) f(record);
    out += record.dump() + "\n";
    begin = end + 1;
  }
  return out;
}

std::string refused(const std::string& text) {
  try {
    parse_trace(text, "run-000.trace.jsonl");
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("the trace was read");
  return {};
}

}  // namespace

TEST_CASE("a version 3 trace is written and read back whole", "[trace]") {
  const std::string text = serialize_trace(v3_trace());
  const Trace t = parse_trace(text, "run-000.trace.jsonl");
  CHECK(t.header.format_version == 3);
  CHECK(t.header.params == v3_trace().header.params);
  CHECK(t.header.buffers == v3_trace().header.buffers);
  CHECK(t.initial_buffers == v3_trace().initial_buffers);
  CHECK(t.steps[1].buffers == v3_trace().steps[1].buffers);
  REQUIRE(t.failed());
  CHECK(t.final->error == "ZeroDivisionError");
  CHECK(describe_failure(*t.final) == "failed (ZeroDivisionError) after 2 steps");
  CHECK(serialize_trace(t) == text);
  // JSON has no NaN: the loss that is not finite is null beside its bits, and so is the mean.
  std::size_t line = 0, begin = 0;
  for (; line < 3; ++line) begin = text.find('\n', begin) + 1;
  const json step1 = json::parse(text.substr(begin, text.find('\n', begin) - begin));
  CHECK(step1["loss"].is_null());
  CHECK(step1["loss_bits"] == "0x7fc00000");
}

TEST_CASE("version 3 fields are checked", "[trace]") {
  const std::string text = serialize_trace(v3_trace());
  const std::size_t end = 5;  // header, init, 2 steps, epoch, end
  CHECK_THAT(refused(with_line_edited(text, 0, [](json& h) { h["params"][2]["dtype"] = "f33"; })),
             Contains("field 'params[2].dtype': expected a dtype"));
  CHECK_THAT(refused(with_line_edited(text, 0, [](json& h) { h["params"][0]["shape"] = {-1}; })),
             Contains("params[0].shape[0]"));
  CHECK_THAT(refused(with_line_edited(text, 0, [](json& h) { h.erase("buffers"); })),
             Contains("buffers"));
  CHECK_THAT(refused(with_line_edited(text, 1, [](json& i) { i["buffers"].erase(0); })),
             Contains("buffers"));
  CHECK_THAT(refused(with_line_edited(text, 2, [](json& s) { s.erase("buffers"); })),
             Contains("field 'buffers'"));
  CHECK_THAT(refused(with_line_edited(text, end, [](json& e) { e["status"] = "crashed"; })),
             Contains("field 'status': expected \"completed\" or \"failed\""));
  CHECK_THAT(refused(with_line_edited(text, end, [](json& e) { e.erase("error"); })),
             Contains("field 'error'"));
  CHECK_THAT(refused(with_line_edited(text, end, [](json& e) { e["status"] = "completed"; })),
             Contains("a completed run has no error"));
  CHECK_THAT(refused(with_line_edited(text, end, [](json& e) { e.erase("status"); })),
             Contains("field 'status'"));
  CHECK_THAT(
      refused(with_line_edited(text, end, [](json& e) { e["buffers"][1] = e["buffers"][0]; })),
      Contains("the final digest of bn.num_batches_tracked"));
}

TEST_CASE("versions 1 and 2 stay as they were", "[trace]") {
  Trace t = v3_trace();
  t.header.format_version = kTraceFormatVersion;
  t.header.params = {{"w", {2}, "f32"}};
  t.header.buffers.clear();
  t.initial_weights = {v3_digest(1)};
  for (StepRecord& r : t.steps) r.grads = r.weights = {v3_digest(9)}, r.buffers.clear();
  t.final->weights = {v3_digest(9)};
  t.final->buffers.clear();
  t.final->status = RunStatus::completed;
  t.final->error.clear();
  const std::string text = serialize_trace(t);
  CHECK(text.find("\"status\"") == std::string::npos);  // a version 1 trace is always completed
  CHECK(text.find("\"dtype\"") == std::string::npos);
  CHECK_FALSE(parse_trace(text, "run-000.trace.jsonl").failed());
  CHECK_THAT(
      refused(with_line_edited(text, 0, [](json& h) { h["params"][0]["shape"] = json::array(); })),
      Contains("a parameter has at least one dimension"));
}

TEST_CASE("the recorder's seeds and warnings are read back, checked, and optional", "[trace]") {
  Trace with = v3_trace();
  const std::string a = v3_digest(7).hex(), b = v3_digest(8).hex();
  with.header.rng_states = {{"torch", a}, {"cuda", {a, b}}, {"numpy", b}};
  with.header.seeded = {{"seed", 18446744073709551615u}, {"rng_states", {{"torch", b}}}};
  with.header.recorder_warnings = {"rec.step() at step 0 found the weights unchanged"};
  const std::string text = serialize_trace(with);
  const Trace t = parse_trace(text, "run-000.trace.jsonl");
  CHECK(t.header.rng_states == with.header.rng_states);
  CHECK(t.header.seeded == with.header.seeded);
  CHECK(t.header.recorder_warnings == with.header.recorder_warnings);
  CHECK(serialize_trace(t) == text);
  // Absent (older traces, the engine's): none, and none written back.
  const Trace without = parse_trace(serialize_trace(v3_trace()), "run-000.trace.jsonl");
  CHECK(without.header.rng_states.is_null());
  CHECK(without.header.recorder_warnings.empty());
  CHECK(serialize_trace(without).find("seeded") == std::string::npos);
  CHECK_THAT(refused(with_line_edited(text, 0, [](json& h) { h["rng_states"]["torch"] = "xyz"; })),
             Contains("rng_states.torch"));
  CHECK_THAT(refused(with_line_edited(text, 0, [](json& h) { h["seeded"]["seed"] = -1; })),
             Contains("seeded.seed"));
  CHECK_THAT(refused(with_line_edited(text, 0, [](json& h) { h["recorder_warnings"] = {""}; })),
             Contains("recorder_warnings[0]"));
}
