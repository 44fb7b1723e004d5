// What a new user meets first, through the binary: the same command run twice, a bad report path
// found before any training, a CI gate that cannot pass on nothing (exit 5), and a report that
// says the next step: the exact command that names the op where the runs part, which is run here
// and does.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"

using Catch::Matchers::Contains;
using ra::test::quoted;
using ra::test::read_text;
using ra::test::run_cli;
using ra::test::TempDir;

namespace {

namespace fs = std::filesystem;

std::string write_next_step_spec(const TempDir& dir) {
  const auto spec = nlohmann::json::parse(R"({
    "name": "next", "seed": 4, "threads": 1, "device": "cpu",
    "data": {"train": {"format": "random", "samples": 64, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 1}})");
  return quoted(dir.write("spec.json", spec.dump()));
}

// The binary run in `dir` (its default output folder is relative to the working directory).
ra::test::CliResult run_in_folder(const fs::path& dir, const std::string& args) {
  TempDir tmp;
  const auto out = tmp.path() / "stdout", err = tmp.path() / "stderr";
  const std::string command = "cd " + quoted(dir) + " && '" + REPRO_AUDIT_BINARY + "' " + args +
                              " >" + quoted(out) + " 2>" + quoted(err) + " </dev/null";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_text(out), read_text(err)};
}

}  // namespace

TEST_CASE("the same command run twice: the earlier audit moves aside", "[cli][usability]") {
  TempDir dir;
  const std::string spec = write_next_step_spec(dir);
  const auto first = run_in_folder(dir.path(), "run " + spec + " --runs 2");
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const std::string first_id =
      nlohmann::json::parse(read_text(dir.path() / "repro-audit-out/next/audit.json"))["audit_id"];
  const auto second =
      run_in_folder(dir.path(), "run " + spec + " --runs 2 --mode nondeterministic");
  INFO(second.err);
  CHECK(second.exit_code == 0);
  CHECK_THAT(second.err, Contains("moved the earlier audit in repro-audit-out/next to "
                                  "repro-audit-out/next.20"));
  // The new audit is in the default folder, the earlier one whole beside it.
  int earlier = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "repro-audit-out")) {
    if (!e.path().filename().string().starts_with("next.")) continue;
    ++earlier;
    CHECK(nlohmann::json::parse(read_text(e.path() / "audit.json"))["audit_id"] == first_id);
    CHECK(run_cli("compare " + quoted(e.path())).exit_code == 0);
    // No lock left behind with the folder (issue 61: the moved folder kept a stale audit.lock).
    CHECK_FALSE(fs::exists(e.path() / "audit.lock"));
  }
  CHECK(earlier == 1);
  CHECK(nlohmann::json::parse(
            read_text(dir.path() / "repro-audit-out/next/audit.json"))["determinism"]["mode"] ==
        "nondeterministic");
  // An explicit --out keeps the strict rule: a folder holding an audit is refused.
  const auto out = quoted(dir.path() / "repro-audit-out" / "next");
  CHECK(run_cli("run " + spec + " --runs 2 --out " + out).exit_code == 2);
}

TEST_CASE("a report path in a missing folder fails before any run trains", "[cli][usability]") {
  TempDir dir;
  const auto r =
      run_cli("run " + write_next_step_spec(dir) + " --runs 2 --out " + quoted(dir.path() / "out") +
              " --html " + quoted(dir.path() / "nodir" / "x.html"));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("does not exist"));
  CHECK_FALSE(fs::exists(dir.path() / "out"));  // nothing was trained, no folder made
}

TEST_CASE("an audit that compared nothing exits 5, in text, JSON and JUnit", "[cli][usability]") {
  TempDir dir;
  const std::string spec = write_next_step_spec(dir);
  const auto one =
      run_cli("run " + spec + " --runs 1 --out " + quoted(dir.path() / "one") + " --junit " +
              quoted(dir.path() / "one.xml") + " --json " + quoted(dir.path() / "one.json"));
  CHECK(one.exit_code == 5);
  CHECK_THAT(one.out, Contains("nothing was compared, no verdict (exit 5"));
  CHECK_THAT(one.out, Contains("repro-audit: next, 1 run, mode deterministic\n"));
  CHECK_THAT(one.out, Contains("NO SAME-SEED PAIR to compare (1 run): "));
  CHECK_THAT(read_text(dir.path() / "one.xml"), Contains("type=\"nothing-compared\""));
  const auto report = nlohmann::json::parse(read_text(dir.path() / "one.json"));
  CHECK(report["verdict"]["nothing_compared"] == true);
  // Different seeds only: the audit asked for the spread, not for identity (issue 38): exit 0.
  const auto different = run_cli("run " + spec + " --runs 2 --seeds different --out " +
                                 quoted(dir.path() / "different"));
  CHECK(different.exit_code == 0);
  CHECK_THAT(different.out, Contains("DIFFERENT SEEDS ONLY (2 runs)"));
  // compare of one trace; and --allow-empty for the scripts that want 0.
  const std::string trace = quoted(dir.path() / "one" / "run-000.trace.jsonl");
  CHECK(run_cli("compare " + trace).exit_code == 5);
  const auto allowed = run_cli("compare " + trace + " --allow-empty");
  CHECK(allowed.exit_code == 0);
  CHECK_THAT(allowed.out, Contains("(allowed: --allow-empty)"));
}

TEST_CASE("a divergence without op records says the command that names the op, which does",
          "[cli][usability]") {
  TempDir dir;
  const std::string spec = write_next_step_spec(dir);
  const fs::path out = dir.path() / "out";
  // A weight changed after step 2's update: what the op records of step 2 will show.
  const auto diverged = run_cli("run " + spec + " --runs 2 --out " + quoted(out) +
                                " --inject-fault run=1,step=2,tensor=dense_0.weight --json " +
                                quoted(dir.path() / "r.json"));
  INFO(diverged.err);
  REQUIRE(diverged.exit_code == 1);
  const std::string expected_prefix =
      "next step: repro-audit run " + (dir.path() / "spec.json").string() + " --runs 2";
  CHECK_THAT(diverged.out, Contains(expected_prefix));
  CHECK_THAT(diverged.out, Contains("--trace-ops 2:3 --out " + (out.string() + "-ops")));
  const auto report = nlohmann::json::parse(read_text(dir.path() / "r.json"));
  REQUIRE(report["next_step"].is_object());
  CHECK(report["next_step"]["trace_ops"] == "2:3");
  const std::string command = report["next_step"]["command"];
  CHECK(command.find("--json") == std::string::npos);  // the report files are the first audit's
  // The next step, run as printed: the root cause is named, and no further step is needed.
  const auto localised = run_cli(command.substr(std::string("repro-audit ").size()));
  INFO(localised.err);
  CHECK(localised.exit_code == 1);
  CHECK_THAT(localised.out, Contains("root cause: outside the traced ops, step 2"));
  CHECK_THAT(localised.out, !Contains("next step:"));
}

TEST_CASE("a divergence at a step recorded per category: the next step names the tensor",
          "[cli][usability][detail]") {
  TempDir dir;
  const std::string spec = write_next_step_spec(dir);
  const fs::path out = dir.path() / "out";
  // Per tensor at steps 0 and 3 only (trace format version 4); the fault is at step 2.
  const auto diverged = run_cli(
      "run " + spec + " --runs 2 --tensor-digests every:3 --out " + quoted(out) +
      " --inject-fault run=1,step=2,tensor=dense_0.weight --json " + quoted(dir.path() / "r.json"));
  INFO(diverged.err);
  REQUIRE(diverged.exit_code == 1);
  CHECK_THAT(diverged.out, Contains("first divergence: step 2 (epoch 0, batch 2), weights (one "
                                    "digest for all of them at this step)"));
  CHECK_THAT(diverged.out, Contains("--tensor-digests every:3"));
  CHECK_THAT(diverged.out, Contains("--trace-ops 2:3 --tensor-digests 2:3 --out"));
  const auto trace = read_text(out / "run-000.trace.jsonl");
  CHECK_THAT(trace, Contains("\"format_version\":4"));
  CHECK_THAT(trace, Contains("\"weights_digest\""));
  const auto report = nlohmann::json::parse(read_text(dir.path() / "r.json"));
  CHECK(report["first_divergence"]["per_category"] == true);
  CHECK(report["first_divergence"]["tensor"].is_null());
  CHECK(nlohmann::json::parse(read_text(out / "audit.json"))["tensor_digests"] == "every:3");
  // The next step, run as printed: the tensor and the root cause are named.
  const std::string command = report["next_step"]["command"];
  const auto named = run_cli(command.substr(std::string("repro-audit ").size()));
  INFO(named.err);
  CHECK(named.exit_code == 1);
  CHECK_THAT(named.out, Contains("weights of dense_0.weight"));
  CHECK_THAT(named.out, Contains("root cause: outside the traced ops, step 2"));
  // --resume of the first folder with another plan is refused, naming it.
  const auto other = run_cli("run " + spec + " --runs 3 --tensor-digests every:5 --resume --out " +
                             quoted(out) + " --inject-fault run=1,step=2,tensor=dense_0.weight");
  CHECK(other.exit_code == 2);
  CHECK_THAT(other.err, Contains("--tensor-digests"));
}

TEST_CASE("under --tensor-digests none the next step is a command the tool accepts",
          "[cli][usability][detail]") {
  TempDir dir;
  const std::string spec = write_next_step_spec(dir);
  const fs::path out = dir.path() / "out";
  // No digest per tensor at any step: the next step must replace "none", which excludes every
  // other level of detail, with the window (issue 61: it added the window beside it).
  const auto diverged = run_cli(
      "run " + spec + " --runs 2 --tensor-digests none --out " + quoted(out) +
      " --inject-fault run=1,step=2,tensor=dense_0.weight --json " + quoted(dir.path() / "r.json"));
  INFO(diverged.err);
  REQUIRE(diverged.exit_code == 1);
  const auto report = nlohmann::json::parse(read_text(dir.path() / "r.json"));
  REQUIRE(report["next_step"].is_object());
  const std::string command = report["next_step"]["command"];
  CHECK(command.find("--tensor-digests none") == std::string::npos);
  CHECK_THAT(command, Contains("--tensor-digests 2:3"));
  const auto named = run_cli(command.substr(std::string("repro-audit ").size()));
  INFO(named.err);
  CHECK(named.exit_code == 1);
  CHECK_THAT(named.out, Contains("weights of dense_0.weight"));
}
