// The JUnit XML report (report/junit.h): its verdicts per testcase, its escaping, and its form:
// every report validates with xmllint against docs/junit-subset.xsd, the subset CI readers share.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "report/junit.h"
#include "support/temp_dir.h"
#include "support/text_lines.h"
#include "trace/in_memory_traces.h"

namespace {

using ra::test::count_of;

using ra::test::runs_of;
using ra::test::TraceBuilder;
using ra::trace::Trace;

const std::filesystem::path kSource = REPRO_AUDIT_SOURCE_DIR;

// xmllint's verdict on `xml` against the subset schema: "" when it validates, else its output.
std::string schema_problems(const std::string& xml) {
  REQUIRE(std::system("xmllint --version > /dev/null 2>&1") == 0);  // libxml2-utils: scripts/setup
  ra::test::TempDir dir;
  const auto file = dir.path / "report.xml", log = dir.path / "xmllint.log";
  std::ofstream(file, std::ios::binary) << xml;
  const std::string command = "xmllint --noout --schema '" +
                              (kSource / "docs" / "junit-subset.xsd").string() + "' '" +
                              file.string() + "' > '" + log.string() + "' 2>&1";
  if (std::system(command.c_str()) == 0) return "";
  std::ifstream in(log);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Each testcase's name, in the report's order.
std::vector<std::string> case_names(const std::string& xml) {
  std::vector<std::string> names;
  for (auto at = xml.find("<testcase "); at != std::string::npos;
       at = xml.find("<testcase ", at + 1)) {
    const auto start = xml.find(" name=\"", at) + 7;
    names.push_back(xml.substr(start, xml.find('"', start) - start));
  }
  return names;
}

}  // namespace

TEST_CASE("xml_escaped keeps text readable and markup out", "[report][junit]") {
  using ra::report::xml_escaped;
  CHECK(xml_escaped("a<b>&\"c\"'d'") == "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  CHECK(xml_escaped("line 1\n\tline 2") == "line 1\n\tline 2");  // allowed in XML 1.0
  CHECK(xml_escaped("bell\x07 esc\x1b[2K") == "bell\\x07 esc\\x1b[2K");
  CHECK(xml_escaped("bad \xff byte") == "bad \\xff byte");
  CHECK(xml_escaped("not a char: \xef\xbf\xbf \xef\xbf\xbe") == "not a char: \\uFFFF \\uFFFE");
  CHECK(xml_escaped("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");  // UTF-8 kept
}

TEST_CASE("a divergence where identity was expected fails the verdict and each category",
          "[report][junit]") {
  TraceBuilder b;
  std::vector<Trace> traces = runs_of(b, 3);
  ra::test::diverge(traces[2], 1, 2);  // dense_1.weight's gradient from step 1
  const auto result = ra::compare::compare_traces(traces, {});
  REQUIRE(result.diverged());
  const std::string xml = ra::report::render_junit(result);
  CHECK(schema_problems(xml).empty());
  // Verdict, gradients, weights, optimizer state and losses fail; initial weights and batches
  // pass.
  CHECK(xml.find("tests=\"7\" failures=\"5\" errors=\"0\" skipped=\"0\"") != std::string::npos);
  CHECK(count_of(xml, "<failure ") == 5);
  CHECK(xml.find("name=\"3 initial weights\" time=\"0.000\"/>") != std::string::npos);
  // The verdict's message is where the runs first part; its text holds the rest, not the message
  // again.
  CHECK(xml.find("name=\"1 verdict\"") < xml.find("name=\"3 initial weights\""));
  CHECK(xml.find("<failure message=\"first divergence: step 1 (epoch 0, batch 1), gradients of "
                 "dense_1.weight (runs 2 differ from run 0)\" type=\"divergence\">DIVERGED: ") !=
        std::string::npos);
  CHECK(count_of(xml, "first divergence: step 1") == 2);  // the message, and the suite's output
  CHECK(xml.find("<failure message=\"first differs at step 1 (epoch 0, batch 1), in "
                 "dense_1.weight (runs 2 differ from run 0); 3 steps differ\" "
                 "type=\"divergence\"></failure>") != std::string::npos);
  // The next step: the traces have no op records.
  CHECK(xml.find("next step: run the audit again with --trace-ops 1:2") != std::string::npos);
  // Properties: what a CI page needs; per-run facts are in the JSON report.
  CHECK(count_of(xml, "<property ") == 5);
  CHECK(xml.find("run.2.seeds") == std::string::npos);
}

TEST_CASE("the cases are numbered in causal order, so a viewer sorting by name keeps it",
          "[report][junit]") {
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 2);
  ra::test::diverge(traces[1], 2, 0);
  const std::string xml = ra::report::render_junit(ra::compare::compare_traces(traces, {}));
  const std::vector<std::string> names = case_names(xml);
  CHECK(names == std::vector<std::string>{"1 verdict", "3 initial weights", "4 batches", "5 losses",
                                          "6 gradients", "7 weights", "8 optimizer state"});
  CHECK(std::is_sorted(names.begin(), names.end()));
}

TEST_CASE("a finding's case number does not depend on the audit folder's case", "[report][junit]") {
  // Two same-seed runs and a perturbed one whose flip shows (the perturbation control's case),
  // compared from an audit folder (the "2 complete audit" case) and from files: the categories
  // and the findings keep their numbers either way (before, a finding's skipped one with the
  // folder: "10 perturbation control" after "8 optimizer state").
  TraceBuilder same;
  TraceBuilder perturbed = same;
  perturbed.seed_group = "perturbed";
  std::vector<Trace> traces{same.build(0), same.build(1), perturbed.build(2)};
  traces[2].header.perturbation = ra::trace::Perturbation{"dense_1.weight", 2, 0, 2, 3};
  traces[2].initial_weights[2] = ra::test::changed(traces[2].initial_weights[2]);
  ra::compare::ComparisonOptions from_folder;
  ra::compare::AuditFolderCheck folder;
  folder.folder = "out";
  folder.planned_runs = 3;
  folder.runs = {0, 1, 2};
  from_folder.audit_folders = {folder};
  for (const bool with_folder : {false, true}) {
    CAPTURE(with_folder);
    const std::string xml = ra::report::render_junit(ra::compare::compare_traces(
        traces, with_folder ? from_folder : ra::compare::ComparisonOptions{}));
    const std::vector<std::string> names = case_names(xml);
    std::vector<std::string> expected{"1 verdict",         "3 initial weights",     "4 batches",
                                      "5 losses",          "6 gradients",           "7 weights",
                                      "8 optimizer state", "9 perturbation control"};
    if (with_folder) expected.insert(expected.begin() + 1, "2 complete audit");
    CHECK(names == expected);
  }
}

TEST_CASE("differences that were allowed pass, and say so", "[report][junit]") {
  TraceBuilder b;
  b.mode = "nondeterministic";
  std::vector<Trace> traces = runs_of(b, 2);
  ra::test::diverge(traces[1], 0, 0);
  const auto result = ra::compare::compare_traces(traces, {});
  REQUIRE_FALSE(result.identity.identical);
  REQUIRE_FALSE(result.diverged());
  const std::string xml = ra::report::render_junit(result);
  CHECK(schema_problems(xml).empty());
  CHECK(count_of(xml, "<failure ") == 0);
  CHECK(xml.find("failures=\"0\"") != std::string::npos);
  CHECK(xml.find("(allowed: bitwise identity was not expected)</system-out>") != std::string::npos);
  CHECK(xml.find("NOT BITWISE IDENTICAL (allowed)") != std::string::npos);
}

TEST_CASE("one run has nothing to compare: the verdict fails, unless empty is allowed",
          "[report][junit]") {
  auto result = ra::compare::compare_traces(runs_of(TraceBuilder{}, 1), {});
  REQUIRE(result.nothing_compared());
  std::string xml = ra::report::render_junit(result);
  CHECK(schema_problems(xml).empty());
  CHECK(count_of(xml, "<failure ") == 1);
  CHECK(xml.find("type=\"nothing-compared\"") != std::string::npos);
  CHECK(xml.find("nothing was compared, no verdict (exit 5; --allow-empty accepts it)") !=
        std::string::npos);
  CHECK(count_of(xml, "<skipped message=") == 6);  // the categories
  // --allow-empty: nothing fails, everything is skipped.
  ra::compare::ComparisonOptions allow;
  allow.allow_empty = true;
  result = ra::compare::compare_traces(runs_of(TraceBuilder{}, 1), allow);
  xml = ra::report::render_junit(result);
  CHECK(count_of(xml, "<failure ") == 0);
  CHECK(count_of(xml, "<skipped message=") == 7);
  CHECK(xml.find("nothing was compared (allowed: --allow-empty)") != std::string::npos);
}

TEST_CASE("names from specs and traces cannot inject markup into the JUnit report",
          "[report][junit]") {
  TraceBuilder b;
  b.spec_name = "x\"/><testcase name=\"forged\"/><!--\n\x01\xef\xbf\xbf";
  b.params = {"<script>alert(1)</script>", "a&b", "dense_1.weight"};
  std::vector<Trace> traces = runs_of(b, 2);
  ra::test::diverge(traces[1], 0, 0);
  const std::string xml = ra::report::render_junit(ra::compare::compare_traces(traces, {}));
  INFO(xml);
  CHECK(schema_problems(xml).empty());
  CHECK(xml.find("<script>") == std::string::npos);
  CHECK(xml.find("name=\"forged\"") == std::string::npos);
  CHECK(xml.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(count_of(xml, "<testcase ") == 7);
}

TEST_CASE("every golden JUnit report validates against the subset schema", "[report][junit]") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "tests/report/golden")) {
    if (entry.path().extension() != ".xml") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string xml((std::istreambuf_iterator<char>(in)), {});
    INFO(entry.path().string());
    CHECK(schema_problems(xml).empty());
    ++checked;
  }
  CHECK(checked >= 6);
}
