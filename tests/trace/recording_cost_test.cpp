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
