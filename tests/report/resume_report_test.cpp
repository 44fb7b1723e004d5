// The resumes in the reports (docs/report.md "Resume"): the text report's lines for a PyTorch
// script's checkpoint (exec --interrupt-at), each piece worded as the fix in the script, the
// script's save and load times in the cost line, the engine's words kept the engine's; the HTML
// page's section and a JUnit testcase per resume.
#include <catch2/catch.hpp>

#include <string>

#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/resume_check.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/text_format.h"
#include "report/text_sections.h"

using Catch::Matchers::Contains;
using ra::compare::ComparisonResult;
using ra::compare::ResumeVerdict;

namespace {

ResumeVerdict one_verdict(bool script, std::vector<ra::compare::ResumePiece> differing) {
  ResumeVerdict v;
  v.run = 1;
  v.step = 5;
  v.script_checkpoint = script;
  v.differing = std::move(differing);
  v.checkpoint_bytes = 2048;
  v.write_seconds = 0.002;
  v.read_seconds = 0.013;
  if (!v.differing.empty()) {
    v.first_divergence_step = 5;
    v.first_divergence_category = "batches";
    v.first_divergence_tensor = "inputs";
  }
  return v;
}

// A comparison whose one finding is the resume check's of `v` (compare/resume_finding.cpp).
ComparisonResult with_resume(const ResumeVerdict& v) {
  ComparisonResult r;
  r.findings = {ra::compare::resume_finding_of({v}, r.identity.expect_identical)};
  return r;
}

ComparisonResult one_resume(bool script, std::vector<ra::compare::ResumePiece> differing) {
  return with_resume(one_verdict(script, std::move(differing)));
}

}  // namespace

TEST_CASE("a script's exact resume gives the script's save and load times", "[report]") {
  const std::string text = ra::report::text::resumes(one_resume(true, {}));
  REQUIRE(text ==
          "resume of run 1 at step 5: exact (checkpoint 2.0 KiB, the script's save took 2.00 ms, "
          "its load 13.00 ms)\n");
}

TEST_CASE("a script's pieces left out are worded as the fix in the script", "[report]") {
  const std::string text =
      ra::report::text::resumes(one_resume(true, {{"buffers", ""},
                                                  {"lr_scheduler", ""},
                                                  {"grad_scaler", ""},
                                                  {"rng_stream", "torch"},
                                                  {"rng_stream", "cuda"},
                                                  {"rng_stream", "numpy"},
                                                  {"rng_stream", "python_random"},
                                                  {"next_batch", ""}}));
  REQUIRE_THAT(text, Contains("resume of run 1 at step 5: NOT exact"));
  REQUIRE_THAT(text, Contains("BatchNorm's running statistics) were not restored"));
  REQUIRE_THAT(text, Contains("save scheduler.state_dict() and load it"));
  REQUIRE_THAT(text, Contains("save scaler.state_dict() and load it"));
  REQUIRE_THAT(text, Contains("torch's RNG state was not restored: the dropout masks"));
  REQUIRE_THAT(text, Contains("restore it with torch.cuda.set_rng_state_all()"));
  REQUIRE_THAT(text, Contains("restore it with numpy.random.set_state()"));
  REQUIRE_THAT(text, Contains("restore it with random.setstate()"));
  // torch's generator differs: the next batch's words say what a sampler draws from it.
  REQUIRE_THAT(text, Contains("a RandomSampler without a generator of its own draws each epoch's "
                              "order from it as its iterator starts; restore it before that, and "
                              "resume the loader's position (a resumable sampler)"));
  REQUIRE_THAT(text, !Contains("started again from the beginning"));
  REQUIRE_THAT(text, Contains("first divergence after the resume: step 5, batches (inputs)"));
}

TEST_CASE("a next batch that differs under an agreeing torch generator blames no generator",
          "[report]") {
  const std::string text = ra::report::text::resumes(one_resume(true, {{"next_batch", ""}}));
  REQUIRE_THAT(text, Contains("torch's RNG state agreed, so the loader's position or a generator "
                              "of its own (DataLoader(generator=...), a sampler's) is not where"));
}

TEST_CASE("a checkpoint's size is given in the largest unit it reaches", "[report]") {
  ResumeVerdict v = one_verdict(true, {});
  v.checkpoint_bytes = 93612441;  // issue 61 printed "91418.9 KiB"
  const ComparisonResult r = with_resume(v);
  CHECK_THAT(ra::report::text::resumes(r), Contains("(checkpoint 89.3 MiB, the script's save"));
  using ra::report::text::byte_size;
  CHECK(byte_size(700) == "700 bytes");
  CHECK(byte_size(2048) == "2.0 KiB");
  CHECK(byte_size(1024 * 1024 - 1) == "1.0 MiB");  // not "1024.0 KiB"
  CHECK(byte_size(3ull << 30) == "3.0 GiB");
}

TEST_CASE("wrapped keeps a line's indentation and breaks between words", "[report]") {
  using ra::report::text::wrapped;
  CHECK(wrapped("  - one two three", 12, "    ") == "  - one two\n    three\n");
  CHECK(wrapped("short", 12, "  ") == "short\n");
  CHECK(wrapped("averyveryverylongword x", 8, "  ") == "averyveryverylongword\n  x\n");
}

TEST_CASE("the engine's resume keeps the engine's words", "[report]") {
  const std::string text = ra::report::text::resumes(one_resume(false, {{"next_batch", ""}}));
  REQUIRE_THAT(text, Contains("written in 2.00 ms, read in 13.00 ms"));
  REQUIRE_THAT(text, Contains("the data order's position was not restored"));
}

TEST_CASE("the HTML page shows the resumes in the text report's words", "[report]") {
  const std::string html =
      ra::report::render_html(one_resume(true, {{"rng_stream", "numpy"}, {"next_batch", ""}}));
  REQUIRE_THAT(html, Contains("<h2>Resumes</h2>"));
  REQUIRE_THAT(html, Contains("resume of run 1 at step 5: NOT exact"));
  REQUIRE_THAT(html, Contains("restore it with numpy.random.set_state()"));
  REQUIRE(ra::report::render_html(ComparisonResult{}).find("Resumes") == std::string::npos);
}

TEST_CASE("JUnit has a testcase per resume that fails when a piece was left out", "[report]") {
  ComparisonResult r = one_resume(true, {{"rng_stream", "torch"}});
  r.identity.expect_identical = true;
  const std::string failed = ra::report::render_junit(r);
  REQUIRE_THAT(failed, Contains("name=\"3 resume of run 1 at step 5\" time=\"0.015\""));
  REQUIRE_THAT(failed, Contains("<failure message=\"NOT exact (checkpoint 2.0 KiB"));
  REQUIRE_THAT(failed, Contains("type=\"resume\">  - torch&#39;s RNG state was not restored"));
  const std::string passed = ra::report::render_junit(one_resume(true, {}));
  REQUIRE_THAT(passed, Contains("name=\"3 resume of run 1 at step 5\""));
  REQUIRE(passed.find("type=\"resume\"") == std::string::npos);
}

TEST_CASE("a script's own save point names the --interrupt-at step it serves, untimed",
          "[report]") {
  ResumeVerdict v = one_verdict(true, {});
  v.step = 8;
  v.interrupt_at = 5;
  v.write_seconds.reset();
  v.read_seconds.reset();
  ComparisonResult r = with_resume(v);
  REQUIRE(ra::report::text::resumes(r) ==
          "resume of run 1 at step 8 (the script's first save at or after --interrupt-at 5): "
          "exact (checkpoint 2.0 KiB, the script's own save and load)\n");
  r.identity.expect_identical = true;
  const std::string junit = ra::report::render_junit(r);
  REQUIRE_THAT(junit, Contains("name=\"3 resume of run 1 at step 8 (the script&#39;s first save "
                               "at or after --interrupt-at 5)\" time=\"0.000\""));
}
