// The end record's recording_cost (docs/trace-format.md): written and read back as it was, for
// every value that can occur (a fraction under 0, the smallest calibration); a trace without it
// reads as before; a reference that cannot be divided by, or no calibration step, is bad input
// naming the field.
#include <catch2/catch.hpp>

#include <string>

#include "trace/trace_io.h"
#include "trace/whole_trace.h"

namespace {

using ra::test::text_with_replaced;
using ra::trace::RecordingCost;
using ra::trace::Trace;

Trace costed_trace(RecordingCost cost) {
  Trace t = ra::test::whole_one_step_trace();
  t.final->recording_cost = cost;
  return t;
}

}  // namespace

TEST_CASE("a recording cost is written and read back as it was", "[trace]") {
  const Trace plain = ra::test::whole_one_step_trace();
  const std::string text = ra::trace::serialize_trace(plain);
  CHECK(text.find("recording_cost") == std::string::npos);
  CHECK_FALSE(ra::trace::parse_trace(text, "plain").final->recording_cost);

  // A costly step, a step recording made no slower (a fraction under 0: within the noise), the
  // smallest calibration, and numbers whose shortest decimal needs 17 digits.
  for (const RecordingCost& cost :
       {RecordingCost{0.00137, 0.00116, 6}, RecordingCost{0.0099, 0.01, 1},
        RecordingCost{0.1 + 0.2, 1.0 / 3.0, 1 << 20}}) {
    const Trace back = ra::trace::parse_trace(ra::trace::serialize_trace(costed_trace(cost)), "t");
    REQUIRE(back.final->recording_cost);
    CHECK(*back.final->recording_cost == cost);
  }
  CHECK(RecordingCost{0.00137, 0.00116, 6}.fraction() == Approx(0.00137 / 0.00116 - 1.0));
  CHECK(RecordingCost{0.0099, 0.01, 1}.fraction() < 0.0);
}

TEST_CASE("a damaged recording cost is bad input naming its field", "[trace]") {
  const Trace t = costed_trace({0.002, 0.001, 6});
  const auto rejected = [](const std::string& damaged, const std::string& expected) {
    CHECK_THROWS_WITH(ra::trace::parse_trace(damaged, "t"), Catch::Contains(expected));
  };
  rejected(text_with_replaced(t, "\"calibrated_step_wall_seconds\":0.001",
                              "\"calibrated_step_wall_seconds\":0.0"),
           "field 'recording_cost.calibrated_step_wall_seconds': must be a number > 0");
  rejected(text_with_replaced(t, "\"calibration_steps\":6", "\"calibration_steps\":0"),
           "field 'recording_cost.calibration_steps'");
  rejected(text_with_replaced(t, "\"step_wall_seconds\":0.002", "\"step_wall_seconds\":-1"),
           "field 'recording_cost.step_wall_seconds'");
  rejected(text_with_replaced(t, "\"calibration_steps\":6,", ""), "calibration_steps");
  rejected(text_with_replaced(t, "\"step_wall_seconds\":0.002", "\"step_wall_seconds\":\"fast\""),
           "field 'recording_cost.step_wall_seconds'");
}

TEST_CASE("step launches are written and read back as they were", "[trace]") {
  const Trace plain = ra::test::whole_one_step_trace();
  const std::string text = ra::trace::serialize_trace(plain);
  CHECK(text.find("step_launch") == std::string::npos);
  CHECK_FALSE(ra::trace::parse_trace(text, "plain").final->step_launch);

  Trace t = ra::test::whole_one_step_trace();
  REQUIRE(t.final->steps >= 1);
  using ra::trace::StepLaunchRecord;
  const std::int64_t steps = t.final->steps;
  for (const StepLaunchRecord& launches :
       {StepLaunchRecord{steps, 0, 0, {{"CUDA graphs off", steps}}},
        StepLaunchRecord{0, 1, steps - 1, {}},
        StepLaunchRecord{
            steps, 0, 0, {{"capture failed: cudaStreamEndCapture: \"quoted\"\n", steps}}}}) {
    t.final->step_launch = launches;
    const Trace back = ra::trace::parse_trace(ra::trace::serialize_trace(t), "t");
    REQUIRE(back.final->step_launch);
    CHECK(*back.final->step_launch == launches);
  }
}

TEST_CASE("damaged step launches are bad input naming the field", "[trace]") {
  Trace t = ra::test::whole_one_step_trace();
  const std::int64_t steps = t.final->steps;
  t.final->step_launch = ra::trace::StepLaunchRecord{steps, 0, 0, {{"off", steps}}};
  const std::string whole = ra::trace::serialize_trace(t);
  const auto rejected = [&](const std::string& from, const std::string& to,
                            const std::string& expected) {
    std::string damaged = whole;
    const auto at = damaged.find(from);
    REQUIRE(at != std::string::npos);
    damaged.replace(at, from.size(), to);
    CHECK_THROWS_WITH(ra::trace::parse_trace(damaged, "t"), Catch::Contains(expected));
  };
  const std::string eager = "\"eager\":" + std::to_string(steps);
  rejected(eager, "\"eager\":-1", "field 'step_launch.eager'");
  rejected("{\"off\":" + std::to_string(steps) + "}", "{\"off\":0}", "step_launch.eager_reasons");
  rejected("{\"off\":" + std::to_string(steps) + "}", "{}", "counts 0 eager steps");
  rejected("\"replay\":0", "\"replay\":1",
           "counts " + std::to_string(steps + 1) + " steps, the run has " + std::to_string(steps));
  // Fewer than the run's steps: a resumed run's earlier segments lost.
  t.final->step_launch = ra::trace::StepLaunchRecord{0, 0, 0, {}};
  CHECK_THROWS_WITH(
      ra::trace::parse_trace(ra::trace::serialize_trace(t), "t"),
      Catch::Contains("field 'step_launch': counts 0 steps, the run has " + std::to_string(steps)));
  rejected("\"capture\":0,", "", "capture");
}
