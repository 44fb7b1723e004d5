// One run given twice to `compare` of trace files (audit/audit.h's compare_trace_files;
// compare/duplicate_runs.h): the same file named twice or by two paths, or a copy of it, is
// compared with a warning; two runs of one audit, or one run of each of two audits, are not
// copies. The runs are whole traces written without training (tests/trace/whole_trace.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "compare/finding_facts.h"
#include "support/file_text.h"
#include "support/temp_dir.h"
#include "support/text_lines.h"
#include "trace/trace_io.h"
#include "trace/whole_trace.h"

namespace {

using nlohmann::json;
using ra::test::lines_of;
using ra::test::read_text;
using ra::test::TempDir;

// Two runs of one audit, written once for all tests.
const std::filesystem::path& trace_dir() {
  static TempDir dir;
  static const bool written = [] {
    const std::string audit_id = "0123456789abcdef0123456789abcdef";
    ra::test::write_trace_file(ra::test::two_epoch_trace(0, audit_id, 0.002),
                               dir.path / "run-000.trace.jsonl");
    ra::test::write_trace_file(ra::test::two_epoch_trace(1, audit_id, 0.003),
                               dir.path / "run-001.trace.jsonl");
    return true;
  }();
  (void)written;
  return dir.path;
}

std::filesystem::path run_file(int run) {
  return trace_dir() / (run == 0 ? "run-000.trace.jsonl" : "run-001.trace.jsonl");
}

}  // namespace

TEST_CASE("comparing a run with itself is allowed, with a warning", "[audit][trace]") {
  ra::audit::AuditComparisonOptions options;
  SECTION("the same path twice") {
    const auto r = ra::audit::compare_trace_files({run_file(0), run_file(0)}, options);
    REQUIRE(r.identity.identical);
    REQUIRE(r.sources.copies == std::vector<std::vector<int>>{{0, 1}});
    REQUIRE(ra::compare::warnings_of(r).size() == 1);
    REQUIRE(ra::compare::warnings_of(r)[0].find("runs 0 and 1 are the same file") !=
            std::string::npos);
  }
  SECTION("two paths to one file") {
    TempDir dir;
    const auto link = dir.path / "link.trace.jsonl";
    std::filesystem::create_symlink(run_file(0), link);
    const auto r = ra::audit::compare_trace_files({run_file(1), run_file(0), link}, options);
    REQUIRE(r.sources.copies == std::vector<std::vector<int>>{{1, 2}});
    REQUIRE(ra::compare::warnings_of(r).size() == 1);
    REQUIRE(ra::compare::warnings_of(r)[0].find("runs 1 and 2 are the same file") !=
            std::string::npos);
  }
  SECTION("a copy of the file") {
    TempDir dir;
    const auto copy = dir.path / "copy.trace.jsonl";
    std::filesystem::copy_file(run_file(0), copy);
    const auto r = ra::audit::compare_trace_files({run_file(0), copy}, options);
    REQUIRE(r.sources.copies == std::vector<std::vector<int>>{{0, 1}});
    REQUIRE(ra::compare::warnings_of(r)[0].find("copies of one run") != std::string::npos);
  }
  SECTION("two runs of one audit are not copies") {
    const auto r = ra::audit::compare_trace_files({run_file(0), run_file(1)}, options);
    REQUIRE(r.identity.identical);
    REQUIRE(r.sources.copies.empty());
    REQUIRE(ra::compare::warnings_of(r).empty());
  }
  SECTION("one run of each of two audits: same header, other timings, not copies") {
    TempDir dir;
    const auto again = dir.path / "run-000.trace.jsonl";
    ra::test::write_trace_file(
        ra::test::two_epoch_trace(0, "fedcba9876543210fedcba9876543210", 0.0025), again);
    const auto a = ra::trace::read_trace(run_file(0)), b = ra::trace::read_trace(again);
    // The headers differ only in the audit id: the copies criterion must not lean on it.
    json first = json::parse(lines_of(read_text(run_file(0)))[0]);
    json second = json::parse(lines_of(read_text(again))[0]);
    REQUIRE(first.at("audit_id") != second.at("audit_id"));
    first.erase("audit_id");
    second.erase("audit_id");
    REQUIRE(first == second);
    const auto r = ra::audit::compare_trace_files({run_file(0), again}, options);
    REQUIRE(r.identity.identical);
    REQUIRE(ra::compare::warnings_of(r).empty());
  }
}
