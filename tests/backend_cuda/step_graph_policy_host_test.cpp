// The CUDA-graph rules of a training step (backend/cuda/step_graph_policy.h): capture once per
// geometry, replay after, and fall back to eager launches, saying why, where a capture is not
// possible or not worth it. Pure logic: runs everywhere, CI included.
#include <catch2/catch.hpp>

#include <string>

#include "backend/cuda/step_graph_policy.h"
#include "support/text_lines.h"

namespace {

using namespace ra::backend::cuda;
using ra::test::contains;

}  // namespace

TEST_CASE("step graphs: autotune's first step is eager, then capture once and replay",
          "[cuda][host][graph]") {
  StepGraphPolicy policy(true);
  const StepGraphDecision first = policy.decide({128, true});
  CHECK(first.launch == StepLaunch::eager);
  CHECK(contains(first.reason, "cudnnFind"));
  const StepGraphDecision second = policy.decide({128, false});
  CHECK(second.launch == StepLaunch::capture);
  CHECK(second.reason.empty());
  policy.captured(128, true);
  for (int step = 2; step < 5; ++step) {
    const StepGraphDecision d = policy.decide({128, false});
    CHECK(d.launch == StepLaunch::replay);
    CHECK(d.reason.empty());
  }
}

TEST_CASE("step graphs: an epoch's short last batch runs eager, the next epoch replays",
          "[cuda][host][graph]") {
  StepGraphPolicy policy(true);
  REQUIRE(policy.decide({128, false}).launch == StepLaunch::capture);
  policy.captured(128, true);
  const StepGraphDecision last = policy.decide({96, false});
  CHECK(last.launch == StepLaunch::eager);
  CHECK(contains(last.reason, "batch of 96 instead of 128"));
  // A capture reported for another geometry changes nothing.
  policy.captured(96, false, "ignored");
  CHECK(policy.decide({128, false}).launch == StepLaunch::replay);
}

TEST_CASE("step graphs: a failed capture falls back for good, with its reason",
          "[cuda][host][graph]") {
  StepGraphPolicy policy(true);
  REQUIRE(policy.decide({64, false}).launch == StepLaunch::capture);
  policy.captured(64, false,
                  "cudaStreamEndCapture: operation not permitted when stream is capturing");
  for (int step = 1; step < 3; ++step) {
    const StepGraphDecision d = policy.decide({64, false});
    CHECK(d.launch == StepLaunch::eager);
    CHECK(contains(d.reason, "capture failed: cudaStreamEndCapture"));
  }
}

TEST_CASE("step graphs: off means every step eager", "[cuda][host][graph]") {
  StepGraphPolicy policy(false);
  for (const StepFacts facts : {StepFacts{128, true}, StepFacts{128, false}, StepFacts{7, false}}) {
    const StepGraphDecision d = policy.decide(facts);
    CHECK(d.launch == StepLaunch::eager);
    CHECK(d.reason == "CUDA graphs off");
  }
  CHECK(std::string(to_string(StepLaunch::replay)) == "replay");
}

TEST_CASE(
    "step graphs: a run that does not ask for them runs eager, and a stale graph is "
    "captured anew",
    "[cuda][host][graph]") {
  StepGraphPolicy policy(true);
  const StepGraphDecision unasked = policy.decide({128, false, false});
  CHECK(unasked.launch == StepLaunch::eager);
  CHECK(unasked.reason == "CUDA graphs off");
  REQUIRE(policy.decide({128, false}).launch == StepLaunch::capture);
  policy.captured(128, true);
  REQUIRE(policy.decide({128, false}).launch == StepLaunch::replay);
  // A replay found the step's buffers moved: the graph is dropped and the next step captures.
  policy.invalidate();
  CHECK(policy.decide({128, false}).launch == StepLaunch::capture);
  policy.captured(128, true);
  CHECK(policy.decide({128, false}).launch == StepLaunch::replay);
  // The reason of an unsettled step names what a capture cannot hold.
  CHECK(contains(policy.decide({128, true}).reason, "allocation"));
}
