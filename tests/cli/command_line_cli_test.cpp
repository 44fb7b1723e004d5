// The command line at the level of the spec's errors: global options after the subcommand, "did
// you mean" for option names, type errors worded as such, shell completion, a --version that names
// the build, and missing data files named by their spec key at validate as at run.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using ra::test::quoted;
using ra::test::run_cli;
using ra::test::TempDir;

namespace {

std::string write_train_spec(const TempDir& dir, const nlohmann::json& train) {
  nlohmann::json spec = nlohmann::json::parse(R"({
    "name": "cmdline", "seed": 4, "threads": 1, "device": "cpu",
    "data": {"batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [{"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05}, "train": {"epochs": 1}})");
  spec["data"]["train"] = train;
  return quoted(dir.write("spec.json", spec.dump()));
}

const nlohmann::json kRandom = {
    {"format", "random"}, {"samples", 32}, {"shape", {1, 6, 6}}, {"classes", 3}};

}  // namespace

TEST_CASE("global options are accepted after the subcommand", "[cli][usability]") {
  TempDir dir;
  const auto r = run_cli("run " + write_train_spec(dir, kRandom) + " --runs 2 --out " +
                         quoted(dir.path() / "out") + " -q");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, !Contains("[info]"));
}

TEST_CASE("a mistyped option gets a suggestion, a word for a number a type error",
          "[cli][usability]") {
  TempDir dir;
  const std::string spec = write_train_spec(dir, kRandom);
  const auto typo = run_cli("run " + spec + " --run 2");
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, StartsWith("--run: no such option of `run`; did you mean --runs?\n"));
  CHECK_THAT(typo.err, !Contains("unexpected argument '2'"));  // --run's value, said with it
  CHECK_THAT(run_cli("compare x --tolerence 1e-3").err, Contains("did you mean --tolerance?"));
  const auto word = run_cli("run " + spec + " --runs two");
  CHECK(word.exit_code == 2);
  CHECK_THAT(word.err, Contains("--runs: expected a whole number, got 'two'"));
  CHECK_THAT(run_cli("run " + spec + " --jobs 1.5").err,
             Contains("--jobs: expected a whole number, got '1.5'"));
  // A number out of range is still said as a range.
  CHECK_THAT(run_cli("run " + spec + " --runs 0").err, Contains("not in range 1 to 10000"));
}

TEST_CASE("every integer option is checked once, never wrapped or clamped", "[cli][usability]") {
  // CLI11 would read "-1", 2^64 and "1e23" for exec's unsigned --seed as 2^64-1, silently.
  for (const char* value : {"-1", "18446744073709551616"}) {
    const auto r = run_cli(std::string("exec --seed ") + value + " -- true");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(std::string("--seed: expected an integer in "
                                           "0..18446744073709551615, got '") +
                               value + "'"));
  }
  const auto floating = run_cli("exec --seed 1e23 -- true");
  CHECK(floating.exit_code == 2);
  CHECK_THAT(floating.err, Contains("--seed: expected a whole number, got '1e23'"));
  const auto huge = run_cli("exec --jobs 99999999999999999999 -- true");
  CHECK(huge.exit_code == 2);
  CHECK_THAT(huge.err, Contains("--jobs: expected an integer in"));
}

TEST_CASE("completion scripts for bash, zsh and fish", "[cli][usability]") {
  TempDir dir;
  for (const std::string shell : {"bash", "zsh", "fish"}) {
    const auto r = run_cli("completion " + shell);
    INFO(shell << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("repro-audit"));
    CHECK_THAT(r.out, Contains(shell == "fish" ? "-l runs" : "--runs"));
    CHECK_THAT(r.out, Contains("completion"));
  }
  // The bash script is valid bash, and completes `run --ru` to --runs.
  const auto script = dir.write("c.bash", run_cli("completion bash").out);
  const std::string check = "bash -c 'source " + script.string() +
                            "; COMP_WORDS=(repro-audit run --ru); COMP_CWORD=2; _repro_audit; "
                            "echo \"${COMPREPLY[@]}\"' > " +
                            ra::test::quoted(dir.path() / "out.txt");
  REQUIRE(std::system(check.c_str()) == 0);
  CHECK(ra::test::read_text(dir.path() / "out.txt") == "--runs\n");
  CHECK(run_cli("completion tcsh").exit_code == 2);
}

TEST_CASE("the version line names the program, its commit and whether CUDA is in",
          "[cli][usability]") {
  const auto r = run_cli("--version");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, StartsWith("repro-audit 0.1.0 (commit "));
  CHECK_THAT(r.out, Contains(", CUDA "));
}

TEST_CASE("missing data files are named by their spec key, at validate as at run",
          "[cli][usability]") {
  TempDir dir;
  const std::string spec = write_train_spec(
      dir, {{"format", "idx"}, {"images", "/nope/train-images.gz"}, {"labels", "/nope/l.gz"}});
  for (const std::string command :
       {"validate " + spec, "run " + spec + " --runs 2 --out " + quoted(dir.path() / "out")}) {
    const auto r = run_cli(command);
    INFO(command << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("data.train.images: /nope/train-images.gz: cannot open"));
  }
}

TEST_CASE("exec's command line: the command after --, and no spurious second error",
          "[cli][usability]") {
  // The script's own option before "--" is taken for exec's: said so, with the fix.
  const auto forgot = run_cli("exec --runs 2 python3 train.py --epochs 1");
  CHECK(forgot.exit_code == 2);
  CHECK_THAT(forgot.err, Contains("--epochs: no such option of `exec`"));
  CHECK_THAT(forgot.err, Contains("put the command after `--`: repro-audit exec [OPTIONS] -- "
                                  "python3 train.py"));
  // A typo of exec's own option, with "--" given: the suggestion alone, no word of the rest.
  const auto typo = run_cli("exec --run 3 -- python3 train.py");
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, StartsWith("--run: no such option of `exec`; did you mean --runs?\n"));
  CHECK_THAT(typo.err, !Contains("unexpected argument"));
  CHECK_THAT(typo.err, !Contains("put the command after"));
}

TEST_CASE("doctor and exec: the command's options where the tool's go are said so",
          "[cli][usability]") {
  // doctor without "--" gets exec's hint (issue 61).
  const auto doctor = run_cli("doctor python3 x.py --epochs 1");
  CHECK(doctor.exit_code == 2);
  CHECK_THAT(doctor.err, Contains("--epochs: no such option of `doctor`"));
  CHECK_THAT(doctor.err, Contains("put the command after `--`: repro-audit doctor [OPTIONS] -- "
                                  "python3 train.py"));
  // The script's option before "--", the command after it.
  const auto before = run_cli("exec --epochs 3 -- python3 train.py");
  CHECK(before.exit_code == 2);
  CHECK_THAT(before.err, Contains("--epochs: no such option of `exec`\n"));
  CHECK_THAT(before.err, Contains("the command's own options go after `--`, with the command"));
}

TEST_CASE("a subcommand's option before the subcommand is named as such", "[cli][usability]") {
  const auto r = run_cli("--runs 2 exec -- python3 train.py");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--runs: an option of `exec`, given before it: write it after "
                             "`exec` (repro-audit exec --runs ...)"));
  CHECK_THAT(r.err, !Contains("did you mean --runs"));
}

TEST_CASE("a misspelt subcommand gets a suggestion", "[cli][usability]") {
  const auto r = run_cli("exce --runs 3 -- python3 train.py");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, StartsWith("exce: no such subcommand of repro-audit; did you mean exec?\n"));
  CHECK_THAT(run_cli("compair a b").err, Contains("did you mean compare?"));
  // Far from every name: named, no guess; none at all: CLI11's own message.
  CHECK_THAT(run_cli("frobnicate").err, StartsWith("frobnicate: no such subcommand of "
                                                   "repro-audit\n"));
  CHECK_THAT(run_cli("").err, Contains("A subcommand is required"));
}

TEST_CASE("the auditing subcommands' --help lists the exit codes", "[cli][usability]") {
  for (const char* sub : {"run", "exec", "compare"}) {
    INFO(sub);
    const auto r = run_cli(std::string(sub) + " --help");
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("Exit codes"));
    CHECK_THAT(
        r.out,
        Contains("  1  divergence where bitwise equality was expected; with --expect equivalent"));
    CHECK_THAT(r.out, Contains("  5  nothing was compared"));
  }
}

TEST_CASE("progress counts runs from 0, as traces and errors do", "[cli][usability]") {
  TempDir dir;
  const auto r = run_cli("run " + write_train_spec(dir, kRandom) + " --runs 2 --out " +
                         quoted(dir.path() / "out"));
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("run 0 of 0..1 started"));
  CHECK_THAT(r.err, Contains("run 1 of 0..1 done: "));
  CHECK_THAT(r.err, !Contains("run 2"));
}
