// --junit and --html through the binary: run and compare write the JUnit XML report
// (report/junit.h) that CI systems read, failing exactly where bitwise identity was expected and
// not found, and the self-contained HTML page (report/html_report.h).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "support/text_lines.h"

using ra::test::quoted;
using ra::test::run_cli;
using ra::test::TempDir;

namespace {

using ra::test::contains;

std::string write_report_spec(const TempDir& dir) {
  const auto spec = nlohmann::json::parse(R"({
    "name": "cli-junit", "seed": 4, "threads": 2,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 8, 8], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 1}})");
  return quoted(dir.write("spec.json", spec.dump()));
}

}  // namespace

TEST_CASE("run and compare --junit: a passing audit, then a diverged one", "[cli][junit]") {
  TempDir dir;
  const std::string spec = write_report_spec(dir);
  const auto out = dir.path() / "out";
  const auto junit = out / "junit.xml";  // inside the audit folder: the tool's own file
  const auto ok =
      run_cli("run " + spec + " --runs 2 --out " + quoted(out) + " --junit " + quoted(junit));
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  const std::string passed = ra::test::read_text(junit);
  CHECK(contains(passed, "<testsuite name=\"repro-audit.cli-junit\" tests=\"8\" failures=\"0\""));
  CHECK(contains(passed, "name=\"2 complete audit\""));
  CHECK(contains(passed, "<testcase classname=\"repro-audit.cli-junit\" name=\"1 verdict\""));
  CHECK(contains(passed, "BITWISE IDENTICAL: all 2 same-seed runs"));

  // --overwrite knows the report as the tool's own file, and writes the new one in its place.
  const auto bad =
      run_cli("run " + spec + " --runs 2 --out " + quoted(out) + " --overwrite --junit " +
              quoted(junit) + " --inject-fault run=1,step=1,tensor=dense_0.weight");
  INFO(bad.err);
  REQUIRE(bad.exit_code == 1);
  const std::string failed = ra::test::read_text(junit);
  CHECK(
      contains(failed, "failures=\"2\""));  // the verdict and the weights (a low bit: nothing else)
  CHECK(contains(failed,
                 "<failure message=\"first divergence: step 1 (epoch 0, batch 1), weights of "
                 "dense_0.weight"));
  CHECK(contains(failed,
                 "\" type=\"divergence\">DIVERGED: 2 distinct outcomes among 2 same-seed runs"));
  CHECK(contains(failed, "first divergence: step 1 (epoch 0, batch 1), weights of dense_0.weight"));

  // compare of the folder writes the same verdicts.
  const auto again = dir.path() / "again.xml";
  const auto c = run_cli("compare " + quoted(out) + " --junit " + quoted(again));
  REQUIRE(c.exit_code == 1);
  const std::string compared = ra::test::read_text(again);
  CHECK(contains(compared, "failures=\"2\""));
  CHECK(
      contains(compared, "first divergence: step 1 (epoch 0, batch 1), weights of dense_0.weight"));
}

TEST_CASE("run and compare --html write one self-contained page", "[cli][html]") {
  TempDir dir;
  const std::string spec = write_report_spec(dir);
  const auto out = dir.path() / "out";
  const auto page = out / "report.html";
  const auto r =
      run_cli("run " + spec + " --runs 2 --out " + quoted(out) + " --html " + quoted(page) +
              " --inject-fault run=1,step=1,tensor=dense_0.weight,bit=30");
  INFO(r.err);
  REQUIRE(r.exit_code == 1);
  const std::string html = ra::test::read_text(page);
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK(contains(html, "<div class=\"banner diverged\">DIVERGED"));
  CHECK(contains(html, "<title>repro-audit: cli-junit</title>"));
  CHECK_FALSE(contains(html, "<script"));

  // Again with --overwrite: the page is the tool's own file in the folder, replaced.
  const auto again = run_cli("run " + spec + " --runs 2 --out " + quoted(out) +
                             " --overwrite --html " + quoted(page));
  REQUIRE(again.exit_code == 0);
  CHECK(contains(ra::test::read_text(page), "<div class=\"banner ok\">BITWISE IDENTICAL"));
  const auto c =
      run_cli("compare " + quoted(out) + " --html " + quoted(dir.path() / "compare.html"));
  REQUIRE(c.exit_code == 0);
  CHECK(contains(ra::test::read_text(dir.path() / "compare.html"), "<div class=\"banner ok\">"));
}
