// The audit's one verdict (compare/verdict.h) and its readers: each case is a comparison whose
// exit code and reports disagreed before issue 61 (a resume not exact under exit 0, one command's
// runs of two world sizes under exit 0, perturbed runs' resumes judged against run 0, an
// incomplete audit's text naming exit 5 under exit 4), now held to one verdict by
// readers_agree (tests/report/readers_agree.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/equivalent_programs.h"
#include "compare/finding_facts.h"
#include "compare/verdict.h"
#include "core/error.h"
#include "report/junit.h"
#include "report/readers_agree.h"
#include "report/report_cases.h"
#include "report/sections.h"
#include "report/text_format.h"
#include "report/text_report.h"
#include "report/text_sections.h"
#include "trace/in_memory_traces.h"

namespace {

using namespace ra::compare;
using Catch::Matchers::Contains;
using ra::test::exec_run;
using ra::test::expect_identity;
using ra::test::readers_agree;
using ra::test::resume_point;
using ra::test::resumed_runs;
using ra::trace::ResumePoint;
using ra::trace::Trace;

constexpr int kDivergence = static_cast<int>(ra::ExitCode::divergence);

}  // namespace

TEST_CASE("a resume that left a piece out fails the audit though the steps agree", "[report]") {
  ResumePoint resumed = resume_point(2, true);
  resumed.state.rng_streams[0].second = ra::test::changed(resumed.state.rng_streams[0].second);
  const ComparisonResult r = compare_traces(resumed_runs(resumed), expect_identity());
  REQUIRE(r.identity.identical);  // the recorded steps agree: only the resume check sees it
  REQUIRE(resumes_of(r).size() == 1);
  CHECK_FALSE(resumes_of(r)[0].exact());
  CHECK(readers_agree(r) == kDivergence);
  CHECK_THAT(ra::report::render_text(r),
             Contains("DIVERGED: the 2 same-seed runs' recorded steps agree, but a resumed run is "
                      "NOT the uninterrupted run"));
}

TEST_CASE("the same resume under --expect any is allowed, and every reader says so", "[report]") {
  ResumePoint resumed = resume_point(2, true);
  resumed.state.next_batch = ra::test::changed(resumed.state.next_batch);
  ComparisonOptions options;
  options.expect_identical = false;
  const ComparisonResult r = compare_traces(resumed_runs(resumed), options);
  REQUIRE(finding_of(r.findings, "resume") != nullptr);
  CHECK(finding_of(r.findings, "resume")->outcome == CheckOutcome::allowed);
  CHECK(readers_agree(r) == 0);
  CHECK_THAT(ra::report::render_junit(r), Contains("(allowed: bitwise identity was not expected)"));
}

TEST_CASE("pieces that agree at the save point do not make a resume exact when the run parts",
          "[report]") {
  std::vector<Trace> traces = resumed_runs(resume_point(2, true));
  // Step 2, the first after the resume: the same batch, loss and gradients, other weights (a
  // scheduler stepped after the save point); everything after it differs.
  for (ra::trace::StepRecord& s : traces[1].steps) {
    if (s.step < 2) continue;
    for (auto& w : s.weights) w = ra::test::changed(w);
    if (s.step > 2) {
      s.loss_bits += 1;
      for (auto& g : s.grads) g = ra::test::changed(g);
    }
  }
  traces[1].final->weights = traces[1].steps.back().weights;
  traces[1].final->final_loss_bits = traces[1].steps.back().loss_bits;
  const ComparisonResult r = compare_traces(traces, expect_identity());
  REQUIRE(resumes_of(r).size() == 1);
  CHECK(resumes_of(r)[0].restored());
  CHECK_FALSE(resumes_of(r)[0].exact());
  CHECK(readers_agree(r) == kDivergence);
  const std::string text = ra::report::text::resumes(r);
  CHECK_THAT(text, Contains("resume of run 1 at step 2: NOT exact"));
  CHECK_THAT(text, Contains("first divergence after the resume: step 2, weights"));
  CHECK_THAT(text, Contains("the same batch, loss and gradients gave other weights: the learning "
                            "rate (or another hyperparameter) differs"));
  CHECK(ra::report::render_json(r)["resumes"][0]["restored"] == true);
  CHECK(ra::report::render_json(r)["resumes"][0]["exact"] == false);
}

TEST_CASE("a batch that differs after an agreeing save point names work after the save",
          "[report]") {
  std::vector<Trace> traces = resumed_runs(resume_point(2, true));
  for (ra::trace::StepRecord& s : traces[1].steps) {
    if (s.step >= 2) s.batch_indices = ra::test::changed(s.batch_indices);
  }
  const ComparisonResult r = compare_traces(traces, expect_identity());
  REQUIRE(resumes_of(r).size() == 1);
  CHECK(readers_agree(r) == kDivergence);
  CHECK_THAT(ra::report::text::resumes(r),
             Contains("its batch. A random generator was drawn between the save point and the "
                      "next step"));
}

TEST_CASE("an exact resume passes every reader", "[report]") {
  const ComparisonResult r = compare_traces(resumed_runs(resume_point(2, true)), expect_identity());
  REQUIRE(resumes_of(r).size() == 1);
  CHECK(resumes_of(r)[0].exact());
  CHECK(readers_agree(r) == 0);
}

TEST_CASE("a perturbed run's resume is not judged against run 0", "[report]") {
  std::vector<Trace> traces = resumed_runs(resume_point(2, true));
  traces[1].header.seed_group = "perturbed";
  traces[1].header.perturbation = ra::trace::Perturbation{};
  traces[1].resume_points[0].state.weights =
      ra::test::changed(traces[1].resume_points[0].state.weights);
  const ComparisonResult r = compare_traces(traces, expect_identity());
  CHECK(resumes_of(r).empty());
}

TEST_CASE("one command's runs that came up with two world sizes fail every reader", "[report]") {
  // The same command (spec digest): run 1 came up with one rank instead of two.
  std::vector<Trace> runs{exec_run(0, 2, 'a'), exec_run(1, 1, 'a')};
  ra::test::diverge(runs[1], 0, 0);
  const ComparisonResult r = compare_traces(runs, expect_identity());
  REQUIRE(r.world_sizes);
  CHECK_FALSE(r.world_sizes->configuration);
  CHECK(readers_agree(r) == kDivergence);
  CHECK_THAT(ra::report::render_text(r), Contains("world sizes DIFFER within one command"));
  CHECK(ra::report::render_json(r)["world_sizes"]["configuration"] == false);
}

TEST_CASE("world sizes as a configuration pass every reader, JUnit included", "[report]") {
  std::vector<Trace> runs{exec_run(0, 1, 'a'), exec_run(1, 2, 'b')};
  ra::test::diverge(runs[1], 2, 1);
  const ComparisonResult r = compare_traces(runs, expect_identity());
  REQUIRE(r.world_sizes);
  CHECK(r.world_sizes->configuration);
  // Before: exit 0 with JUnit failing every category that differs.
  CHECK(readers_agree(r) == 0);
  CHECK_THAT(ra::report::render_junit(r),
             Contains("(allowed: the runs differ only between world sizes, a configuration)"));
}

TEST_CASE("an incomplete audit that compared nothing names exit 4, not 5", "[report]") {
  ComparisonResult r = compare_traces({ra::test::TraceBuilder{}.build(0)}, {});
  AuditFolderCheck folder;
  folder.folder = "out";
  folder.planned_runs = 2;
  folder.runs = {0};
  folder.missing_runs = {{1, "no trace"}};
  r.sources.audit_folders.push_back(folder);
  CHECK(readers_agree(r) == static_cast<int>(ra::ExitCode::incomplete));
  CHECK_THAT(ra::report::render_text(r), !Contains("exit 5"));
}

TEST_CASE("nothing compared fails with exit 5 unless --allow-empty", "[report]") {
  ComparisonResult r = compare_traces({ra::test::TraceBuilder{}.build(0)}, {});
  CHECK(readers_agree(r) == static_cast<int>(ra::ExitCode::nothing_compared));
  ComparisonOptions allow;
  allow.allow_empty = true;
  r = compare_traces({ra::test::TraceBuilder{}.build(0)}, allow);
  CHECK(readers_agree(r) == 0);
}

TEST_CASE("replicas that part fail every reader whatever the expectation", "[report]") {
  ra::test::TraceBuilder b;
  ComparisonOptions options;
  options.expect_identical = false;
  options.distributed = [](const std::vector<Trace>&) {
    DistributedFindings f;
    f.world_size = 2;
    f.replicas_parted = ReplicaDivergence{1, 3, "conv2d_0.weight", 1};
    return std::optional<DistributedFindings>(f);
  };
  const ComparisonResult r = compare_traces({b.build(0), b.build(1)}, options);
  CHECK(readers_agree(r) == kDivergence);
}

TEST_CASE("a final loss of runs that recorded other numbers of steps says so", "[report]") {
  // Issue 61: a mid-epoch resume recorded 21 and 16 steps, and "final loss" compared steps 20 and
  // 15 without a word.
  ra::test::TraceBuilder b;
  b.steps = 6;
  ra::test::TraceBuilder shorter = b;
  shorter.steps = 4;
  std::vector<Trace> traces{b.build(0), shorter.build(1)};
  ra::test::diverge(traces[1], 1, 0);
  const ComparisonResult r = compare_traces(traces, expect_identity());
  CHECK(readers_agree(r) == kDivergence);
  CHECK_THAT(ra::report::render_text(r),
             Contains("relative (after 6 steps in run 0, 4 in run 1: other steps)"));
}

TEST_CASE("a long warning is wrapped, its fix never cut off", "[report]") {
  ra::test::TraceBuilder b;
  ComparisonResult r = compare_traces({b.build(0), b.build(1)}, {});
  std::string warning = "runs 0, 1: something went wrong";
  while (warning.size() < 520) warning += " and the reason goes on";
  warning += "; the fix: call rec.the_fix() before the loop";
  for (Finding& f : r.findings) {
    if (f.id == "warnings") f = ra::compare::warnings_finding_of({warning});
  }
  REQUIRE(ra::compare::warnings_of(r).size() == 1);
  const std::string text = ra::report::render_text(r);
  CHECK_THAT(text, Contains("the fix: call rec.the_fix() before the loop\n"));
  CHECK_THAT(text, !Contains("more characters)"));
  CHECK_THAT(text, Contains("\nWARNING: runs 0, 1: something went wrong and"));
  // Every line of it within the report's line length, the continuations indented.
  const std::size_t begin = text.find("WARNING: "), end = text.find("before the loop\n");
  const std::string lines = text.substr(begin, end - begin);
  CHECK(lines.find("\n  ") != std::string::npos);
  for (std::size_t at = 0, next = 0; at < lines.size(); at = next + 1) {
    next = std::min(lines.find('\n', at), lines.size());
    CHECK(next - at <= ra::report::text::kMaxLineLength);
  }
}

TEST_CASE("batches that part after a resume get the resume's words, not loader advice",
          "[report]") {
  // Issue 61: after a resume, "watch the loader" and "seed the loader's shuffling" were advised
  // for a script with no workers and a seeded loader; the resume check explains those batches.
  ResumePoint resumed = resume_point(2, true);
  resumed.state.next_batch = ra::test::changed(resumed.state.next_batch);
  std::vector<Trace> traces = resumed_runs(resumed);
  for (ra::trace::StepRecord& s : traces[1].steps) {
    if (s.step >= 2) s.batch_inputs = ra::test::changed(s.batch_inputs);
  }
  const ComparisonResult r = compare_traces(traces, expect_identity());
  REQUIRE(r.first_divergence);
  REQUIRE(r.first_divergence->category == Category::batches);
  CHECK(divergence_follows_resume(r));
  CHECK_FALSE(r.next_step.loader_advice);
  const std::string text = ra::report::render_text(r);
  CHECK_THAT(text, !Contains("watch the loader"));
  CHECK_THAT(text, !Contains("seed the loader's shuffling"));
  CHECK_THAT(text, Contains("the first batch after the resume is not the uninterrupted run's"));
  CHECK(readers_agree(r) == kDivergence);
  // The same batches without a resume: the loader advice stands.
  std::vector<Trace> plain = resumed_runs(resume_point(2, true));
  for (Trace& t : plain) t.resume_points.clear();
  for (ra::trace::StepRecord& s : plain[1].steps) {
    if (s.step >= 2) s.batch_inputs = ra::test::changed(s.batch_inputs);
  }
  CHECK(compare_traces(plain, expect_identity()).next_step.loader_advice);
}

namespace {

// Two same-seed runs and a perturbed one whose flip is `seen` in its initial weights, or not.
ra::compare::ComparisonResult with_perturbed_run(bool seen) {
  ra::test::TraceBuilder same;
  ra::test::TraceBuilder perturbed = same;
  perturbed.seed_group = "perturbed";
  std::vector<ra::trace::Trace> traces = {same.build(0), same.build(1), perturbed.build(2)};
  traces[2].header.perturbation = ra::trace::Perturbation{"dense_1.weight", 1, 0, 2, 3};
  if (seen) traces[2].initial_weights[2] = ra::test::changed(traces[2].initial_weights[2]);
  ra::test::diverge(traces[2], 0, 2);
  return ra::compare::compare_traces(traces, {});
}

}  // namespace

TEST_CASE("a perturbation the audit did not see makes every reader inconclusive", "[report]") {
  const ra::compare::ComparisonResult unseen = with_perturbed_run(false);
  CHECK(ra::test::readers_agree(unseen) == static_cast<int>(ra::ExitCode::inconclusive));
  const std::string text = ra::report::render_text(unseen);
  CHECK(text.find("\nINCONCLUSIVE: all 2 same-seed runs are bitwise identical") !=
        std::string::npos);
  CHECK(ra::report::render_junit(unseen).find("type=\"inconclusive\"") != std::string::npos);
  CHECK(ra::compare::to_json(unseen)["findings"]["perturbation_control"]["outcome"] ==
        "inconclusive");
  // The control seen: the same audit passes every reader.
  CHECK(ra::test::readers_agree(with_perturbed_run(true)) == 0);
}

TEST_CASE("two programs against the floor: every reader says within, beyond or inconclusive",
          "[report]") {
  SECTION("within the floor: passed") {
    const auto r =
        compare_traces(ra::test::equivalent_programs({0, 1, 2, 2, 3, 4}, {0, 1, 3, 2, 4, 4}),
                       ra::test::expect_equivalent());
    CHECK(readers_agree(r) == 0);
    CHECK_THAT(ra::report::render_text(r),
               Contains("equivalence: B is equivalent to A within the floor"));
    CHECK_THAT(ra::report::render_html(r), Contains("<svg"));  // the curves' plot
  }
  SECTION("beyond the floor: failed, exit 1, a JUnit failure naming the step") {
    const auto r =
        compare_traces(ra::test::equivalent_programs({0, 1, 2, 400, 400, 400}, {0, 1, 3, 2, 4, 4}),
                       ra::test::expect_equivalent());
    CHECK(readers_agree(r) == kDivergence);
    CHECK_THAT(ra::report::render_junit(r), Contains("beyond the floor from step 3"));
    CHECK(ra::report::render_json(r)["findings"]["equivalence"]["outcome"] == "failed");
  }
  SECTION("beyond, with a perturbed floor run: the verdict line names the failed finding") {
    // The perturbation control is then the first finding of the generic forms and passes (after
    // the environment and the instability, sections); the equivalence fails: the text's verdict
    // line must name it whichever place it has.
    auto traces = ra::test::equivalent_programs({0, 1, 2, 400, 400, 400}, {0, 1, 3, 2, 4, 4});
    traces[2].header.seed_group = "perturbed";
    traces[2].header.perturbation = ra::trace::Perturbation{"dense_1.weight", 1, 0, 2, 3};
    traces[2].initial_weights[2] = ra::test::changed(traces[2].initial_weights[2]);
    const auto r = compare_traces(traces, ra::test::expect_equivalent());
    std::vector<std::string> ids;
    for (const Finding& f : r.findings) ids.push_back(f.id);
    CHECK(ids == std::vector<std::string>{"environment", "instability", "perturbation_control",
                                          "equivalence", "warnings"});
    CHECK(readers_agree(r) == kDivergence);
    CHECK_THAT(ra::report::render_text(r), Contains("DIVERGED: equivalence failed (below)"));
  }
  SECTION("a floor run that is A to the bit: inconclusive, exit 6") {
    auto traces = ra::test::equivalent_programs({0, 1, 2, 2, 3, 4}, {0, 0, 0, 0, 0, 0});
    ra::test::TraceBuilder builder;
    builder.steps = 6;
    traces[2] = builder.build(2);
    const auto r = compare_traces(traces, ra::test::expect_equivalent());
    CHECK(readers_agree(r) == static_cast<int>(ra::ExitCode::inconclusive));
    CHECK(ra::report::render_json(r)["findings"]["equivalence"]["outcome"] == "inconclusive");
  }
}
