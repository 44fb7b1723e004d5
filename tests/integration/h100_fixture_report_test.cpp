// The reports of real GPU audits, read on any machine: three H100 audits of the Keras convnet
// (tests/audit/fixtures/h100-2026-11-26, README there) compared from their folders as
// `repro-audit compare DIR --no-magnitude` does, with the text and JSON reports checked against
// goldens (tests/report/golden/h100_*) and the HTML and JUnit reports read for what a GPU user
// must see: the true root cause, the algorithm difference as one line by run group, and no line
// blaming another machine for runs made in one process. (In tests/integration, which links every
// module: it reads audit folders through audit::compare_inputs and renders with report, and
// neither tests/audit nor tests/report links the other.)
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "compare/finding_facts.h"
#include "formats/json_text.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/sections.h"
#include "report/text_report.h"
#include "support/golden.h"
#include "support/temp_dir.h"
#include "support/text_lines.h"

using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using ra::compare::ComparisonResult;
using ra::compare::RootCause;

const fs::path kFixtureRoot = fs::path(REPRO_AUDIT_SOURCE_DIR) / "tests" / "audit" / "fixtures";
const fs::path kFixtures = kFixtureRoot / "h100-2026-11-26";

// `text` with every occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

// One audit folder of the fixture, copied (compare may look at its lock) and compared.
struct FixtureReport {
  ra::test::TempDir dir;
  fs::path folder;
  std::string fixtures_name;
  ComparisonResult result;

  explicit FixtureReport(const std::string& set, const fs::path& fixtures = kFixtures)
      : folder(dir.path / set), fixtures_name(fixtures.filename().string()) {
    fs::copy(fixtures / set, folder, fs::copy_options::recursive);
    ra::audit::AuditComparisonOptions options;
    options.measure_magnitudes = false;  // a replay of a GPU run needs the GPU
    result = ra::audit::compare_inputs({folder}, options);
  }
  // A report with the copy's folder written as the fixture's, so goldens hold on any machine.
  std::string portable(const std::string& report) const {
    return replaced(report, folder.string(), fixtures_name + "/" + folder.filename().string());
  }
};

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0;
  for (const std::string& line : ra::test::lines_of(text)) widest = std::max(widest, line.size());
  return widest;
}

}  // namespace

TEST_CASE(
    "H100 autotune audit: the atomic filter gradient is the root cause, the algorithm "
    "difference one line by run group",
    "[report][h100]") {
  const FixtureReport f("autotune");
  const ComparisonResult& r = f.result;
  REQUIRE(r.identity.classes.size() == 3);
  // Every run autotuned the atomic BWD_FILTER_ALGO_0 for conv2d_0: its race is the root cause.
  REQUIRE(r.root_cause.causes.size() == 1);
  const RootCause& c = r.root_cause.causes[0];
  CHECK(c.record.op == "conv2d.backward_filter");
  CHECK(c.record.layer == "conv2d_0");
  CHECK(c.step == 0);
  CHECK(c.runs == std::vector<int>{1, 2});
  CHECK(c.cause == RootCause::Class::nondeterministic_kernel);
  REQUIRE(c.algorithms.size() == 1);
  CHECK(c.algorithms[0].runs == std::vector<int>{0, 1, 2});
  CHECK(c.algorithms[0].algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0");
  CHECK(c.algorithms[0].deterministic == false);
  CHECK(c.algorithms[0].chosen_by == "autotuned");
  CHECK(c.algorithms[0].autotune_ms.size() == 3);
  // Run 1 also chose another backward-data algorithm for conv2d_1: one ledger difference.
  REQUIRE(ra::compare::environment_of(r).ledger.size() == 1);
  const ra::compare::LedgerDifference& d = ra::compare::environment_of(r).ledger[0];
  CHECK(d.layer == "conv 128x32x26x26 k64 3x3 s1 p0");
  CHECK(d.direction == "backward_data");
  REQUIRE(d.groups.size() == 2);
  CHECK(d.groups[0].runs == std::vector<int>{0, 2});
  CHECK(d.groups[0].algorithm == "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING");
  CHECK(d.groups[1].runs == std::vector<int>{1});
  CHECK(d.groups[1].algorithm == "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT");
  // One process, one GPU: equal fingerprints, so no run ran "on another machine".
  CHECK(ra::compare::environment_of(r).environment.empty());
  CHECK(r.divergent_machines.empty());

  const std::string text = f.portable(ra::report::render_text(r));
  CHECK(widest_line(text) <= 300);
  CHECK_THAT(text, !Contains("another machine"));
  CHECK_THAT(text, Contains("algorithm ledger differs: conv 128x32x26x26 k64 3x3 s1 p0 "
                            "backward_data: {0,2} FFT_TILING, {1} FFT (autotuned; all "
                            "deterministic)"));
  CHECK_THAT(text, Contains("  cause: nondeterministic kernel"));
  CHECK_THAT(text, Contains("  algorithm: CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 (NOT deterministic, "
                            "autotuned, "));
  ra::test::check_golden("h100_autotune.txt", text);

  // The JSON report: ledger differences are structured, as a JSON parser reads them.
  const std::string json_text = f.portable(ra::report::render_json(r).dump(2) + "\n");
  const nlohmann::json j = ra::formats::parse_json_text(json_text, "report");
  REQUIRE(j["ledger_differences"].size() == 1);
  CHECK(j["ledger_differences"][0]["direction"] == "backward_data");
  CHECK(j["ledger_differences"][0]["groups"][1]["runs"] == nlohmann::json::array({1}));
  CHECK(j["ledger_differences"][0]["groups"][1]["algorithm"] ==
        "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT");
  CHECK(j["root_causes"][0]["cause"] == "nondeterministic_kernel");
  CHECK(j["divergent_machines"].empty());
  ra::test::check_golden("h100_autotune.json", json_text);

  // The HTML page and the JUnit file carry the same lines, never a raw ledger.
  const std::string html = ra::report::render_html(r);
  CHECK_THAT(html, Contains("backward_data: {0,2} FFT_TILING, {1} FFT"));
  CHECK_THAT(html, !Contains("[{&quot;algorithm"));
  CHECK_THAT(html, !Contains("another machine"));
  const std::string junit = ra::report::render_junit(r);
  CHECK_THAT(junit, Contains("cause: nondeterministic kernel"));
  CHECK(widest_line(junit) <= 300 + 200);  // a JUnit line also holds its XML attributes
}

TEST_CASE("H100 nondeterministic audit: the atomic split-K dense weight gradient",
          "[report][h100]") {
  const FixtureReport f("nondeterministic");
  const ComparisonResult& r = f.result;
  REQUIRE(r.root_cause.causes.size() >= 1);
  const RootCause& c = r.root_cause.causes[0];
  CHECK(c.record.op == "dense.backward_weight");
  CHECK(c.record.layer == "dense_1");
  CHECK(c.cause == RootCause::Class::nondeterministic_kernel);
  REQUIRE(c.algorithms.size() == 1);
  CHECK_THAT(c.algorithms[0].algorithm, Contains("splitk"));
  CHECK(c.algorithms[0].deterministic == false);
  CHECK(ra::compare::environment_of(r).ledger.empty());
  const std::string text = f.portable(ra::report::render_text(r));
  CHECK(widest_line(text) <= 300);
  CHECK_THAT(text, !Contains("another machine"));
  ra::test::check_golden("h100_nondeterministic.txt", text);
}

TEST_CASE("H100 deterministic audit: bitwise identical, nothing to explain", "[report][h100]") {
  const FixtureReport f("deterministic");
  const ComparisonResult& r = f.result;
  CHECK(r.identity.identical);
  CHECK(r.root_cause.causes.empty());
  CHECK(ra::compare::environment_of(r).ledger.empty());
  CHECK_THAT(ra::report::render_text(r), Contains("BITWISE IDENTICAL: all 3 same-seed runs"));
}

// Real audits (an H100's, 26 November 2026; the CPU's, 29 November: a resume, a loader's workers,
// two DDP ranks) in every form, byte for byte: the check that a change of the report's structure
// (issue 60's findings and sections) keeps every output of real audits.
TEST_CASE("real audits in every form, byte for byte against their goldens", "[report][h100]") {
  const std::pair<const char*, const char*> sets[] = {
      {"h100", "autotune"},      {"h100", "nondeterministic"},
      {"h100", "deterministic"}, {"cpu", "resume"},
      {"cpu", "loader"},         {"cpu", "ddp"}};
  for (const auto& [machine, set] : sets) {
    INFO(set);
    const bool h100 = std::string(machine) == "h100";
    const FixtureReport f(set, h100 ? kFixtures : kFixtureRoot / "cpu-2026-11-29");
    const std::string name = std::string(machine) + "_" + set;
    ra::test::check_golden(name + ".txt", f.portable(ra::report::render_text(f.result)));
    ra::test::check_golden(name + ".json",
                           f.portable(ra::report::render_json(f.result).dump(2) + "\n"));
    ra::test::check_golden(name + ".xml", f.portable(ra::report::render_junit(f.result)));
    ra::test::check_golden(name + ".html", f.portable(ra::report::render_html(f.result)));
  }
}
