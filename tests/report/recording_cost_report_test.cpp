// The report's recording figure (docs/report.md, "Cost"): measured where every run's trace holds a
// recording cost (the largest run's step against its calibration), summed where any lacks one,
// and the text and the HTML page say which.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare.h"
#include "report/html_report.h"
#include "report/text_report.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::test::runs_of;
using ra::test::TraceBuilder;
using ra::trace::RecordingCost;
using ra::trace::Trace;

std::vector<Trace> costed_runs() {
  TraceBuilder b;
  b.steps = 4;
  std::vector<Trace> traces = runs_of(b, 3);
  traces[0].final->recording_cost = RecordingCost{0.0011, 0.001, 6};   // +10%
  traces[1].final->recording_cost = RecordingCost{0.00125, 0.001, 6};  // +25%, the largest
  traces[2].final->recording_cost = RecordingCost{0.00099, 0.001, 6};  // -1%: noise
  return traces;
}

}  // namespace

TEST_CASE("a measured recording cost is reported as measured, the largest run's", "[report]") {
  const ra::compare::ComparisonResult r = ra::compare::compare_traces(costed_runs(), {});
  REQUIRE(r.runs.size() == 3);
  CHECK(r.runs[0].recording_fraction == Approx(0.1));
  CHECK(r.runs[2].recording_fraction == Approx(-0.01));
  for (const auto& run : r.runs) CHECK(run.recording_measured);
  const std::string text = ra::report::render_text(r);
  CHECK_THAT(text, Catch::Contains("recording the trace cost at most 25.00% of step time "
                                   "(measured: each run's median step against steps trained "
                                   "with recording off)"));
  CHECK_THAT(ra::report::render_html(r), Catch::Contains("<td>25.00% measured</td>"));
  CHECK(ra::compare::to_json(r)["runs"][1]["recording_method"] == "calibrated");
}

TEST_CASE("one run without a recording cost makes the figure summed, and says so", "[report]") {
  std::vector<Trace> traces = costed_runs();
  traces[1].final->recording_cost.reset();
  const ra::compare::ComparisonResult r = ra::compare::compare_traces(traces, {});
  CHECK_FALSE(r.runs[1].recording_measured);
  const std::string text = ra::report::render_text(r);
  CHECK_THAT(text, Catch::Contains("of step time (summed: the recorder's own time over the "
                                   "steps' time)"));
  CHECK(ra::compare::to_json(r)["runs"][1]["recording_method"] == "summed");
}
