// Through the binary: a GPU audit explained on a machine without a GPU (the H100 fixtures of
// tests/audit/fixtures), and --save-algorithms / --pin-algorithms refused, with the exit code and
// message a user needs, where they cannot work.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "support/text_lines.h"

using Catch::Matchers::Contains;
using ra::test::quoted;
using ra::test::run_cli;

namespace {

namespace fs = std::filesystem;

const fs::path kFixtures =
    fs::path(REPRO_AUDIT_SOURCE_DIR) / "tests" / "audit" / "fixtures" / "h100-2026-11-26";
const fs::path kQuick = fs::path(REPRO_AUDIT_SOURCE_DIR) / "configs" / "quick.json";

}  // namespace

TEST_CASE(
    "compare of an H100 autotune audit: the algorithm difference in one line, no other "
    "machine, no line over 300 characters",
    "[cli][pins]") {
  ra::test::TempDir dir;
  fs::copy(kFixtures / "autotune", dir.path() / "autotune", fs::copy_options::recursive);
  const auto r = run_cli("compare " + quoted(dir.path() / "autotune") + " --no-magnitude --json " +
                         quoted(dir.path() / "report.json"));
  INFO(r.err);
  CHECK(r.exit_code == 0);  // autotune: differences allowed
  std::size_t widest = 0;
  for (const std::string& line : ra::test::lines_of(r.out)) widest = std::max(widest, line.size());
  CHECK(widest <= 300);
  CHECK_THAT(r.out, !Contains("another machine"));
  CHECK_THAT(r.out, Contains("algorithm ledger differs: conv 128x32x26x26 k64 3x3 s1 p0 "
                             "backward_data: {0,2} FFT_TILING, {1} FFT"));
  CHECK_THAT(r.out, Contains("algorithm: CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 (NOT deterministic"));
  const auto report = nlohmann::json::parse(ra::test::read_text(dir.path() / "report.json"));
  REQUIRE(report.at("ledger_differences").size() == 1);
  CHECK(report.at("ledger_differences")[0].at("groups")[0].at("runs") ==
        nlohmann::json::array({0, 2}));
  CHECK(report.at("root_causes")[0].at("cause") == "nondeterministic_kernel");
}

TEST_CASE("saving and pinning algorithms where they cannot work", "[cli][pins]") {
  ra::test::TempDir dir;
  const std::string trace = quoted(kFixtures / "autotune" / "run-000.trace.jsonl");
  SECTION("a CPU run has nothing to pin or save: exit 2, before any run") {
    const auto pin = run_cli("run " + quoted(kQuick) + " --device cpu --runs 1 --out " +
                             quoted(dir.path() / "a") + " --pin-algorithms " + trace);
    CHECK(pin.exit_code == 2);
    CHECK_THAT(pin.err, Contains("--pin-algorithms"));
    CHECK_THAT(pin.err, Contains("the runs train on the CPU"));
    const auto save = run_cli("run " + quoted(kQuick) + " --device cpu --runs 1 --out " +
                              quoted(dir.path() / "b") + " --save-algorithms " +
                              quoted(dir.path() / "algos.json"));
    CHECK(save.exit_code == 2);
    CHECK_THAT(save.err, Contains("--save-algorithms: the runs train on the CPU"));
    CHECK_FALSE(fs::exists(dir.path() / "a"));  // refused before the folder was made
    CHECK_FALSE(fs::exists(dir.path() / "algos.json"));
  }
  SECTION("the GPU asked for where none is usable: exit 3, as the run itself would") {
    const auto r = run_cli("run " + quoted(kQuick) + " --device cuda --runs 1 --out " +
                           quoted(dir.path() / "c") + " --pin-algorithms " + trace);
    INFO(r.err);
    if (r.exit_code == 0) {
      WARN("skipped: this machine has a usable GPU");
      return;
    }
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.err, Contains("no GPU is usable"));
  }
  SECTION("a file that is no algorithm file nor trace: exit 2, named") {
    const fs::path spec = dir.write("not-algos.json", R"({"name": "x"})");
    const auto r = run_cli("run " + quoted(kQuick) + " --runs 1 --out " + quoted(dir.path() / "d") +
                           " --device auto --pin-algorithms " + quoted(spec));
    CHECK(r.exit_code == 2);
  }
}
