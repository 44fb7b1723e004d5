// `compare` on damaged or edited traces exits 2 naming the file, the line and the field; comparing
// a trace with itself exits 0 with a warning in the text report, the JSON report and on stderr.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "support/text_lines.h"

using ra::test::run_cli;
using ra::test::TempDir;

namespace {

using ra::test::quoted;

using ra::test::join_lines;
using ra::test::lines_of;

// An audit of 2 runs (2 epochs of 3 steps: line 1 header, 2 init, 3-5 steps, 6 epoch, 7-9 steps,
// 10 epoch, 11 end) in dir/out.
void run_audit(const TempDir& dir) {
  const auto spec = dir.write("spec.json", R"({
    "name": "trace-damage", "seed": 4, "threads": 1,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [{"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 2}})");
  const auto r = run_cli("run " + quoted(spec) + " --runs 2 --out " + quoted(dir.path() / "out"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("compare: a trace with a step record removed exits 2 naming file, line and field",
          "[cli][audit][trace]") {
  TempDir dir;
  run_audit(dir);
  auto lines = lines_of(ra::test::read_text(dir.path() / "out" / "run-001.trace.jsonl"));
  lines.erase(lines.begin() + 3);  // step 1 (line 4)
  const auto damaged = dir.write("damaged.trace.jsonl", join_lines(lines));
  const auto r = run_cli("compare " + quoted(dir.path() / "out" / "run-000.trace.jsonl") + " " +
                         quoted(damaged));
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("damaged.trace.jsonl:4: field 'step': step 2 out of order (expected 1)") !=
          std::string::npos);
}

TEST_CASE("compare: a header field of the wrong type exits 2, not 3", "[cli][audit][trace]") {
  TempDir dir;
  run_audit(dir);
  auto lines = lines_of(ra::test::read_text(dir.path() / "out" / "run-001.trace.jsonl"));
  auto header = nlohmann::json::parse(lines[0]);
  header["determinism"] = nlohmann::json::array();
  lines[0] = header.dump();
  const auto damaged = dir.write("edited.trace.jsonl", join_lines(lines));
  const auto r = run_cli("compare " + quoted(dir.path() / "out" / "run-000.trace.jsonl") + " " +
                         quoted(damaged) + " --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("edited.trace.jsonl:1: field 'determinism': expected an object, found an "
                     "array") != std::string::npos);
  REQUIRE(r.err.find("internal error") == std::string::npos);
}

TEST_CASE("compare: an end record edited to another step count exits 2", "[cli][audit][trace]") {
  TempDir dir;
  run_audit(dir);
  auto lines = lines_of(ra::test::read_text(dir.path() / "out" / "run-001.trace.jsonl"));
  auto end = nlohmann::json::parse(lines.back());
  end["steps"] = 5;
  lines.back() = end.dump();
  const auto damaged = dir.write("steps.trace.jsonl", join_lines(lines));
  const auto r = run_cli("compare " + quoted(damaged) + " " + quoted(dir.path() / "out"));
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find("steps.trace.jsonl:11: field 'steps': the end record counts 5 steps") !=
          std::string::npos);
}

TEST_CASE("compare: a trace compared with itself exits 0 with a warning", "[cli][audit][trace]") {
  TempDir dir;
  run_audit(dir);
  const auto trace = quoted(dir.path() / "out" / "run-000.trace.jsonl");
  const std::string warning = "runs 0 and 1 are the same file";

  const auto text = run_cli("compare " + trace + " " + trace);
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  REQUIRE(text.out.find("BITWISE IDENTICAL") != std::string::npos);
  REQUIRE(text.out.find("WARNING: " + warning) != std::string::npos);
  REQUIRE(text.err.find(warning) != std::string::npos);

  const auto json = run_cli("compare " + trace + " " + trace + " --json -");
  REQUIRE(json.exit_code == 0);
  const auto report = nlohmann::json::parse(json.out);  // stdout stays pure JSON
  REQUIRE(report.at("warnings").size() == 1);
  REQUIRE(report.at("warnings")[0].get<std::string>().find(warning) != std::string::npos);
  REQUIRE(report.at("copies") == nlohmann::json::parse("[[0, 1]]"));
  REQUIRE(json.err.find(warning) != std::string::npos);

  // A copy elsewhere is one run too; two runs of the audit are not.
  std::filesystem::copy_file(dir.path() / "out" / "run-000.trace.jsonl",
                             dir.path() / "copy.trace.jsonl");
  const auto copy =
      run_cli("compare " + trace + " " + quoted(dir.path() / "copy.trace.jsonl") + " --json -");
  REQUIRE(copy.exit_code == 0);
  REQUIRE(nlohmann::json::parse(copy.out).at("warnings")[0].get<std::string>().find(
              "copies of one run") != std::string::npos);
  const auto audit = run_cli("compare " + quoted(dir.path() / "out") + " --json -");
  REQUIRE(audit.exit_code == 0);
  REQUIRE(nlohmann::json::parse(audit.out).at("warnings").empty());
  REQUIRE(audit.out.find("WARNING") == std::string::npos);
}

TEST_CASE("compare: a run whose loss became NaN reads back", "[cli][audit][trace]") {
  // nlohmann/json writes a NaN mean loss as null; the reader used to refuse its own trace.
  TempDir dir;
  const auto spec = dir.write("spec.json", R"({
    "name": "nan-loss", "seed": 4, "threads": 1,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [{"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 3e38},
    "train": {"epochs": 4}})");
  REQUIRE(
      run_cli("run " + quoted(spec) + " --runs 2 --out " + quoted(dir.path() / "out")).exit_code ==
      0);
  const auto trace = ra::test::read_text(dir.path() / "out" / "run-000.trace.jsonl");
  REQUIRE(trace.find("\"train_loss\":null") != std::string::npos);
  const auto r = run_cli("compare " + quoted(dir.path() / "out"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("BITWISE IDENTICAL") != std::string::npos);
}
