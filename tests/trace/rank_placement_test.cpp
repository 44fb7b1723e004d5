// The header's `distributed` field (docs/trace-format.md, "Data-parallel runs"): a rank of a
// data-parallel run, written and read back, and every value checked.
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "trace/test_header.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

using namespace ra::audit;

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
std::string refused(const std::function<void(json&)>& edit) {
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
  CHECK_THAT(refused([](json& d) { d["rank"] = 2; }),
             Contains("rank 2 is not below the world size 2"));
  CHECK_THAT(refused([](json& d) { d["world_size"] = 1; }), Contains("world_size"));
  CHECK_THAT(refused([](json& d) { d["rank"] = -1; }), Contains("rank"));
  CHECK_THAT(refused([](json& d) { d["backend"] = ""; }), Contains("backend"));
  CHECK_THAT(refused([](json& d) { d["nccl"] = {{"NCCL_ALGO", 1}}; }), Contains("NCCL_ALGO"));
}
