// The header's `distributed` field (docs/trace-format.md, "Data-parallel runs"): a rank of a
// data-parallel run, written and read back, and every value checked; and the steps' buckets
// through the collective (`collectives`).
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "trace/test_header.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

using namespace ra::trace;

// Rank 1 of 2 on gloo with NCCL_ALGO set: one parameter, one step, completed.
Trace rank_trace() {
  Trace t;
  t.header = ra::test::test_header("ddp", kTraceFormatVersionWithStatus);
  t.header.backend = "pytorch-cpu";
  t.header.params = {{"module.0.weight", {2, 3}, "f32"}};
  t.header.distributed = RankPlacement{1, 2, "gloo", {{"NCCL_ALGO", "Ring"}}};
  t.initial_weights = {ra::Digest128{1, 2}};
  StepRecord r;
  r.loss_bits = 0x3f800000u;
  r.grads = r.weights = {ra::Digest128{3, 4}};
  t.steps.push_back(r);
  EpochRecord e;
  e.steps = 1;
  e.mean_train_loss = 1.0;
  t.epochs.push_back(e);
  FinalRecord f;
  f.steps = 1;
  f.final_loss_bits = r.loss_bits;
  f.weights = r.weights;
  t.final = f;
  return t;
}

// The reader's message for the trace with its header's `distributed` field edited by `edit`.
std::string refusal_of(const std::function<void(json&)>& edit) {
  const std::string text = serialize_trace(rank_trace());
  const std::size_t end = text.find('\n');
  json header = json::parse(text.substr(0, end));
  edit(header["distributed"]);
  try {
    parse_trace(header.dump() + text.substr(end), "run-000/rank-1.trace.jsonl");
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("the trace was read");
  return {};
}

// rank_trace() with DDP's default hook wrapped and one bucket in its step.
Trace trace_with_bucket() {
  Trace t = rank_trace();
  t.header.distributed->comm_hook = "default";
  t.header.distributed->bucket_cap_bytes = 26214400;
  t.steps[0].collectives = {
      CollectiveRecord{0, {"module.0.weight"}, 6, "f32", ra::Digest128{5, 6}, ra::Digest128{7, 8}}};
  return t;
}

// The reader's message for trace_with_bucket() with its step's line edited by `edit`.
std::string refused_step(const std::function<void(json&)>& edit) {
  const std::string text = serialize_trace(trace_with_bucket());
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  json step = json::parse(lines[2]);
  edit(step);
  lines[2] = step.dump();
  std::string edited;
  for (const std::string& l : lines) edited += l + "\n";
  try {
    parse_trace(edited, "run-000/rank-1.trace.jsonl");
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("the trace was read");
  return {};
}

}  // namespace

TEST_CASE("a rank's placement is written and read back", "[trace]") {
  const std::string text = serialize_trace(rank_trace());
  const Trace t = parse_trace(text, "run-000/rank-1.trace.jsonl");
  REQUIRE(t.header.distributed);
  CHECK(t.header.distributed->rank == 1);
  CHECK(t.header.distributed->world_size == 2);
  CHECK(t.header.distributed->backend == "gloo");
  CHECK(t.header.distributed->nccl ==
        std::vector<std::pair<std::string, std::string>>{{"NCCL_ALGO", "Ring"}});
  CHECK(serialize_trace(t) == text);
}

TEST_CASE("a trace without the field is a single process's", "[trace]") {
  Trace single = rank_trace();
  single.header.distributed.reset();
  const std::string text = serialize_trace(single);
  CHECK(text.find("distributed") == std::string::npos);
  CHECK_FALSE(parse_trace(text, "run-000.trace.jsonl").header.distributed);
}

TEST_CASE("a placement the run cannot have is refused by name", "[trace]") {
  CHECK_THAT(refusal_of([](json& d) { d["rank"] = 2; }),
             Contains("rank 2 is not below the world size 2"));
  CHECK_THAT(refusal_of([](json& d) { d["world_size"] = 1; }), Contains("world_size"));
  CHECK_THAT(refusal_of([](json& d) { d["rank"] = -1; }), Contains("rank"));
  CHECK_THAT(refusal_of([](json& d) { d["backend"] = ""; }), Contains("backend"));
  CHECK_THAT(refusal_of([](json& d) { d["nccl"] = {{"NCCL_ALGO", 1}}; }), Contains("NCCL_ALGO"));
}

TEST_CASE("a step's buckets through the collective are written and read back", "[trace]") {
  const std::string text = serialize_trace(trace_with_bucket());
  const Trace t = parse_trace(text, "run-000/rank-1.trace.jsonl");
  CHECK(t.header.distributed->comm_hook == "default");
  CHECK(t.header.distributed->bucket_cap_bytes == 26214400);
  CHECK(t.steps.at(0).collectives == trace_with_bucket().steps[0].collectives);
  CHECK(serialize_trace(t) == text);
}

TEST_CASE("a bucket record the run cannot have is refused by name", "[trace]") {
  CHECK_THAT(refused_step([](json& s) { s["collectives"][0]["params"] = {"fc.weight"}; }),
             Contains("names no parameter of the header: 'fc.weight'"));
  CHECK_THAT(refused_step([](json& s) { s["collectives"][0]["before"] = "12"; }),
             Contains("before"));
  CHECK_THAT(refused_step([](json& s) { s["collectives"][0]["bucket"] = -1; }), Contains("bucket"));
  CHECK_THAT(refused_step([](json& s) { s["collectives"][0]["dtype"] = "f33"; }),
             Contains("unknown dtype 'f33'"));
  CHECK_THAT(refused_step([](json& s) { s["collectives"][0].erase("after"); }), Contains("after"));
}

TEST_CASE("bucket records without the hook in the header are refused", "[trace]") {
  Trace t = trace_with_bucket();
  t.header.distributed->comm_hook.clear();
  CHECK_THROWS_WITH(parse_trace(serialize_trace(t), "run-000/rank-1.trace.jsonl"),
                    Contains("collective records need the header's distributed.comm_hook"));
}
