// The instability finding in every form (--seeds all, docs/report.md "Instability"): the text's
// table and finding lines, the JSON's `instability`, the HTML's plot per metric and finding, the
// JUnit properties; absent without a perturbed group.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare.h"
#include "compare/finding_facts.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/report_cases.h"
#include "report/sections.h"
#include "report/text_report.h"
#include "support/text_lines.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::test::count_of;

using ra::test::TraceBuilder;
using ra::trace::Trace;

using ra::test::three_groups;

}  // namespace

TEST_CASE("the instability finding in text, JSON, HTML and JUnit", "[report][instability]") {
  const ra::compare::ComparisonResult r = three_groups();
  REQUIRE(ra::compare::instability_of(r) != nullptr);

  const std::string text = ra::report::render_text(r);
  CHECK_THAT(text, Catch::Contains("instability (perturbed group: the same seed, deterministic "
                                   "kernels, one bit of one initial weight flipped per run):"));
  CHECK_THAT(text, Catch::Contains("perturbed run 4: dense_1.weight[4] bit 0 (0x00000002 -> "
                                   "0x00000003): parts from run 0 at this weight, by design"));
  CHECK(count_of(text, "  finding: ") == 3);
  CHECK_THAT(text, Catch::Contains("perturbed runs (2): final loss"));

  const nlohmann::json json = ra::report::render_json(r);
  const nlohmann::json& found = json.at("instability");
  CHECK(found.at("perturbed_runs").size() == 2);
  CHECK(found.at("perturbed_runs")[0].at("parts_at_perturbation") == true);
  REQUIRE(found.at("metrics").size() == 3);
  const nlohmann::json& churn = found.at("metrics")[2];
  CHECK(churn.at("metric") == "disagreement");
  CHECK(churn.at("groups").at("same").at("spread") == 0.25);
  CHECK(churn.at("groups").at("different").at("spread") == 0.75);
  CHECK(churn.at("groups").at("perturbed").at("spread") == 0.25);
  CHECK(churn.at("same_over_perturbed").at("ratio") == 1.0);
  CHECK(churn.at("verdict") == "unstable");
  CHECK(churn.at("threshold") == 2.0);

  const std::string html = ra::report::render_html(r);
  CHECK_THAT(html, Catch::Contains("<h2>Does the nondeterminism matter?</h2>"));
  CHECK(count_of(html, "<p class=\"finding\">") == 3);
  CHECK_THAT(html, Catch::Contains("Prediction disagreement per pair of runs, by group"));

  const std::string xml = ra::report::render_junit(r);
  CHECK_THAT(xml, Catch::Contains("<property name=\"instability.disagreement.verdict\" "
                                  "value=\"unstable\"/>"));
  CHECK_THAT(xml, Catch::Contains("<property name=\"instability.disagreement.same_spread\" "
                                  "value=\"0.25\"/>"));
  CHECK(count_of(xml, ".interpretation\"") == 3);
}

TEST_CASE("no instability section without a perturbed group", "[report][instability]") {
  TraceBuilder same;
  const ra::compare::ComparisonResult r =
      ra::compare::compare_traces({same.build(0), same.build(1)}, {});
  CHECK(ra::compare::instability_of(r) == nullptr);
  CHECK(ra::report::render_text(r).find("instability") == std::string::npos);
  CHECK_FALSE(ra::report::render_json(r).contains("instability"));
  CHECK(ra::report::render_html(r).find("Does the nondeterminism") == std::string::npos);
  CHECK(ra::report::render_junit(r).find("instability.") == std::string::npos);
}

TEST_CASE("a PyTorch audit's perturbed group is not said to run deterministic kernels",
          "[report][instability]") {
  // Issue 61: the report said "deterministic kernels" under a first line saying
  // use_deterministic_algorithms off; the engine forces them, a script runs its own settings.
  const ra::compare::ComparisonResult r = three_groups("pytorch-cpu", false);
  REQUIRE(ra::compare::instability_of(r) != nullptr);
  const std::string text = ra::report::render_text(r);
  CHECK_THAT(text, Catch::Contains("instability (perturbed group: the same seed, the script's own "
                                   "kernel settings, one bit"));
  CHECK_THAT(ra::report::render_html(r), Catch::Contains("the script's own kernel settings"));
  CHECK_THAT(ra::report::render_html(r), !Catch::Contains("deterministic kernels, one bit"));
  // Without predictions, the note names the call that records them.
  CHECK_THAT(text, Catch::Contains("call rec.eval(predictions, labels) after the evaluation"));
}
