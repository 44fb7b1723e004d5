// How the runs' steps were launched with --cuda-graphs on (the trace end record's step_launch,
// docs/report.md "Cost"): summed over the runs that asked, with each eager reason, in the text;
// per run in the JSON and the HTML cost table; absent from all three when no run asked.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare.h"
#include "report/html_report.h"
#include "report/sections.h"
#include "report/text_report.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::test::runs_of;
using ra::test::TraceBuilder;
using ra::trace::StepLaunchRecord;
using ra::trace::Trace;

std::vector<Trace> launched_runs() {
  TraceBuilder b;
  b.steps = 8;
  std::vector<Trace> traces = runs_of(b, 3);
  traces[0].final->step_launch =
      StepLaunchRecord{2, 1, 5, {{"settling: first step", 1}, {"settling: a buffer grew", 1}}};
  traces[1].final->step_launch =
      StepLaunchRecord{8, 0, 0, {{"capture failed: operation not permitted", 8}}};
  // run 2 trained without graphs: no record
  return traces;
}

}  // namespace

TEST_CASE("steps launched as CUDA graphs are summed with their eager reasons", "[report]") {
  const ra::compare::ComparisonResult r = ra::compare::compare_traces(launched_runs(), {});
  REQUIRE(r.runs.size() == 3);
  const std::string text = ra::report::render_text(r);
  CHECK_THAT(text, Catch::Contains("steps as CUDA graphs (--cuda-graphs on, 2 of 3 runs): 5 "
                                   "replayed, 1 captured, 10 eager\n"
                                   "  eager: 8 steps, capture failed: operation not permitted\n"
                                   "  eager: 1 step, settling: a buffer grew\n"
                                   "  eager: 1 step, settling: first step\n"));
  const auto json = ra::report::render_json(r);
  CHECK(json["runs"][0]["step_launch"]["replay"] == 5);
  CHECK(json["runs"][0]["step_launch"]["eager_reasons"]["settling: first step"] == 1);
  CHECK(json["runs"][1]["step_launch"]["eager"] == 8);
  CHECK_FALSE(json["runs"][2].contains("step_launch"));
  const std::string html = ra::report::render_html(r);
  CHECK_THAT(html, Catch::Contains("<th>steps as CUDA graphs</th>"));
  CHECK_THAT(html, Catch::Contains("<td title=\"1 eager: settling: a buffer grew; 1 eager: "
                                   "settling: first step\">5 replayed, 1 captured, 2 eager</td>"));
  CHECK_THAT(html, Catch::Contains("<td>graphs off</td>"));
}

TEST_CASE("without CUDA graphs no report mentions launches", "[report]") {
  TraceBuilder b;
  b.steps = 8;
  const ra::compare::ComparisonResult r = ra::compare::compare_traces(runs_of(b, 2), {});
  CHECK_THAT(ra::report::render_text(r), !Catch::Contains("CUDA graphs"));
  CHECK_THAT(ra::report::render_html(r), !Catch::Contains("CUDA graphs"));
  CHECK_FALSE(ra::report::render_json(r)["runs"][0].contains("step_launch"));
}
