// A data-parallel audit in the reports (docs/distributed.md, docs/report.md): the text report's
// collective, bucket-layout and world-size lines, the HTML page's "Data parallel" section and the
// JUnit testcases per rank, for the replicas and for the collective.
#include <catch2/catch.hpp>

#include <string>

#include "compare/checks.h"
#include "compare/compare.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/text_sections.h"

using Catch::Matchers::Contains;
using ra::compare::ComparisonResult;

namespace {

// A comparison whose data-parallel finding (compare/data_parallel_finding.cpp) is of `f`.
ComparisonResult with_ranks(ComparisonResult r, const ra::compare::DistributedFindings& f) {
  r.findings = {ra::compare::data_parallel_finding_of(r, f)};
  return r;
}

// Two runs of 2 gloo ranks whose bucket 0 left the collective otherwise in run 1.
ra::compare::DistributedFindings collective_findings() {
  ra::compare::DistributedFindings f;
  f.world_size = 2;
  f.backend = "gloo";
  f.comm_hook = "default";
  ra::compare::Divergence d;
  d.category = ra::compare::Category::gradients;
  d.step = 3;
  d.tensor = "fc.weight";
  f.ranks = {{1, false, d}};
  f.runs_checked = 2;
  f.collective =
      ra::compare::CollectiveDivergence{1, 3, 0, {"fc.weight", "fc.bias"}, 12, 0, true, "default"};
  return f;
}

ComparisonResult collective_varies(
    const ra::compare::DistributedFindings& f = collective_findings()) {
  ComparisonResult r;
  r.subject.spec_name = "ddp";
  r.identity.expect_identical = true;
  r.identity.identical = false;
  r.identity.compared_runs = {0, 1};
  return with_ranks(r, f);
}

}  // namespace

TEST_CASE("the collective as the root cause is said in the data-parallel section", "[report]") {
  const std::string text = ra::report::text::distributed(collective_varies());
  CHECK_THAT(text, Contains("  root cause: the collective (gloo): bucket 0 (2 parameters, first "
                            "fc.weight, 12 elements) at step 3 of run 1 had identical inputs on "
                            "every rank, and rank 0's result differs from the reference run's; no "
                            "kernel inside a rank\n"));
  CHECK_THAT(text, Contains("replicas agree"));
}

TEST_CASE("bucket layouts and an unrecorded collective are named", "[report]") {
  ra::compare::DistributedFindings f = collective_findings();
  f.collective.reset();
  f.bucket_layout =
      ra::compare::BucketLayoutDifference{1, std::nullopt, 0, "bucket cap (bucket_cap_mb) ..."};
  CHECK_THAT(ra::report::text::distributed(collective_varies(f)),
             Contains("  bucket layouts differ: bucket cap (bucket_cap_mb) ...\n"));
  f.bucket_layout.reset();
  CHECK_THAT(ra::report::text::distributed(collective_varies(f)),
             Contains("  collective: every bucket's inputs and results as in the reference run "
                      "(hook default)\n"));
  f.comm_hook.clear();
  CHECK_THAT(ra::report::text::distributed(collective_varies(f)),
             Contains("  collective: not recorded (no DDP communication hook wrapped)\n"));
}

TEST_CASE("runs of other world sizes are said to part by design", "[report]") {
  ComparisonResult r;
  r.identity.identical = false;
  r.world_sizes = ra::compare::WorldSizes{{1, 2}, true};
  const std::string text = ra::report::text::distributed(r);
  CHECK_THAT(text, Contains("world size as a configuration: run 0 1 process; run 1 2 ranks"));
  CHECK_THAT(text, Contains("runs of one world size agree: no bug"));
  r.world_sizes->identical_within = false;
  CHECK_THAT(ra::report::text::distributed(r), Contains("runs of one world size DIFFER"));
}

TEST_CASE("the HTML page has a data-parallel section with each rank's verdict", "[report]") {
  const std::string html = ra::report::render_html(collective_varies());
  CHECK_THAT(html, Contains("<h2>Data parallel</h2>"));
  CHECK_THAT(html,
             Contains("<tr><td>1</td><td class=\"differs\">differ</td><td>gradients, step 3"));
  CHECK_THAT(html, Contains("(fc.weight)</td></tr>"));
  CHECK_THAT(html, Contains("root cause: the collective (gloo)"));
  // No loss series in these findings: no distance plot drawn from runs that have none.
  CHECK_THAT(html, !Contains("|loss - reference run's loss|"));
}

TEST_CASE("JUnit has a testcase per rank, for the replicas and for the collective", "[report]") {
  const std::string xml = ra::report::render_junit(collective_varies());
  CHECK_THAT(xml, Contains("name=\"3 rank 1\""));
  CHECK_THAT(xml, Contains("name=\"4 replicas\" time=\"0.000\">\n      <system-out>replicas agree "
                           "(2 runs checked)</system-out>"));
  CHECK_THAT(xml, Contains("name=\"5 collective\""));
  CHECK_THAT(xml, Contains("type=\"collective\""));
}
