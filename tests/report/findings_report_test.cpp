// A report of findings (report/findings_report.h): every form of a finding says what its exit
// code says (failed and inconclusive fail the JUnit case), and text from outside the tool cannot
// forge a line.
#include <catch2/catch.hpp>

#include <string>

#include "compare/finding.h"
#include "core/error.h"
#include "report/findings_report.h"

using Catch::Matchers::Contains;
using namespace ra;

namespace {

compare::Finding finding(compare::CheckOutcome outcome) {
  compare::Finding f;
  f.id = "invariance";
  f.name = "batch invariance";
  f.outcome = outcome;
  f.summary = std::string(compare::outcome_word(outcome)) + ": what was seen";
  f.details = {"sweep: 6 probe(s)", "control: seen"};
  f.table = {{"batch size", "first op"}, {{"13", "aten.addmm.default in fc"}}};
  f.next_steps = {"repro-audit run quick.json --invariance --mode batch_invariant"};
  f.data = {{"invariant", outcome == compare::CheckOutcome::passed}};
  return f;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("every form of a finding agrees with the exit code", "[report][findings]") {
  using compare::CheckOutcome;
  const std::pair<CheckOutcome, int> cases[] = {
      {CheckOutcome::passed, 0},
      {CheckOutcome::allowed, 0},
      {CheckOutcome::skipped, 0},
      {CheckOutcome::failed, static_cast<int>(ExitCode::divergence)},
      {CheckOutcome::inconclusive, static_cast<int>(ExitCode::inconclusive)}};
  for (const auto& [outcome, code] : cases) {
    INFO(compare::to_string(outcome));
    const report::FindingsReport r{
        "batch invariance of Net (pytorch)", {{"device", "cpu"}}, {finding(outcome)}};
    CHECK(compare::findings_exit_code(r.findings) == code);
    const std::string junit = report::render_findings_junit(r);
    CHECK((count(junit, "<failure ") == 1) == (code != 0));
    CHECK((count(junit, "<skipped ") == 1) == (outcome == CheckOutcome::skipped));
    const nlohmann::json json = report::findings_json(r);
    CHECK(json["exit_code"] == code);
    CHECK(json["findings"]["invariance"]["outcome"] == compare::to_string(outcome));
    CHECK(json["findings"]["invariance"]["data"]["invariant"] == (outcome == CheckOutcome::passed));
    const std::string text = report::render_findings_text(r);
    CHECK_THAT(text, Contains("batch invariance: " + std::string(compare::outcome_word(outcome))));
    CHECK_THAT(text, Contains("aten.addmm.default in fc"));
    CHECK_THAT(text, Contains("next step: repro-audit run quick.json --invariance"));
    const std::string html = report::render_findings_html(r);
    const char* cls = outcome == CheckOutcome::passed    ? "banner ok"
                      : outcome == CheckOutcome::allowed ? "banner allowed"
                      : outcome == CheckOutcome::failed  ? "banner diverged"
                                                         : "banner none";
    CHECK_THAT(html, Contains(cls));
  }
}

TEST_CASE("a name from outside the tool cannot forge a line or markup", "[report][findings]") {
  compare::Finding f = finding(compare::CheckOutcome::failed);
  f.details = {"first op: aten.addmm in fc\n  batch invariance: PASSED"};
  f.table.rows[0][1] = "fc\n<script>";
  const report::FindingsReport r{"Net\n<b>", {}, {f}};
  const std::string text = report::render_findings_text(r);
  CHECK(text.find("\n  batch invariance: PASSED") == std::string::npos);
  CHECK_THAT(text, Contains("fc\\n<script>"));
  const std::string html = report::render_findings_html(r);
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
  CHECK(report::render_findings_junit(r).find("<script>") == std::string::npos);
}
