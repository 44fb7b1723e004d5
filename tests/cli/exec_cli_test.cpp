// `repro-audit exec` through the binary, on small PyTorch scripts that record with lib/python's
// recorder (Debian's python3-torch, installed by scripts/setup): seeded runs are bitwise identical,
// unseeded ones part at their initial weights, a run-dependent step is found at its step and
// parameter, a failing command is exit 3 with its output, --seeds both gives both groups'
// statistics, the JUnit and HTML reports are written, shards share one folder, and the command's
// own options after -- stay its own.
#include <stdlib.h>

#include <sys/wait.h>

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

// A training script: `seeding` decides how it seeds, `perturb` what it does after a step.
std::string script(const std::string& seeding, const std::string& perturb = "") {
  return R"(import os, torch, repro_audit
)" + seeding +
         R"(
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
rec = repro_audit.Recorder.from_env(model, optimizer)
data = torch.Generator().manual_seed(7)
x, y = torch.randn(32, 6, generator=data), torch.randint(0, 3, (32,), generator=data)
for step in range(4):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x[step * 8:step * 8 + 8]), y[step * 8:step * 8 + 8])
    loss.backward()
    optimizer.step()
)" + perturb +
         R"(
    rec.step(batch=(x[step * 8:step * 8 + 8], y[step * 8:step * 8 + 8]), loss=loss)
)";
}

// The recorder's package for the commands exec runs, for the length of a test.
struct RecorderOnPath {
  RecorderOnPath() {
    setenv("PYTHONPATH", (std::string(REPRO_AUDIT_SOURCE_DIR) + "/lib/python").c_str(), 1);
  }
  ~RecorderOnPath() { unsetenv("PYTHONPATH"); }
};

ra::test::CliResult exec(const TempDir& dir, const std::string& code, const std::string& options) {
  const auto py = dir.write("train.py", code);
  return run_cli("exec " + options + " --out " + quoted(dir.path() / "out") +
                 " -- /usr/bin/python3 " + quoted(py));
}

// The binary run in `dir`: exec's default folder, repro-audit-out/<name>, is relative to it.
ra::test::CliResult run_in(const TempDir& dir, const std::string& args) {
  TempDir tmp;
  const auto out = tmp.path() / "stdout", err = tmp.path() / "stderr";
  const std::string command = "cd " + quoted(dir.path()) + " && '" + REPRO_AUDIT_BINARY + "' " +
                              args + " >" + quoted(out) + " 2>" + quoted(err) + " </dev/null";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_text(out), read_text(err)};
}

}  // namespace

TEST_CASE("exec run again moves the earlier audit aside, as run does", "[cli][exec]") {
  RecorderOnPath path;
  TempDir dir;
  dir.write("train.py", script("repro_audit.seed_everything()"));
  const std::string command = "exec --runs 2 -- /usr/bin/python3 train.py";
  const auto first = run_in(dir, command);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto manifest = dir.path() / "repro-audit-out" / "train" / "audit.json";
  const std::string first_id = nlohmann::json::parse(read_text(manifest))["audit_id"];
  const auto second = run_in(dir, command);
  INFO(second.err);
  CHECK(second.exit_code == 0);
  CHECK_THAT(second.err, Contains("moved the earlier audit in repro-audit-out/train to "
                                  "repro-audit-out/train.20"));
  CHECK(nlohmann::json::parse(read_text(manifest))["audit_id"] != first_id);
  int earlier = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "repro-audit-out")) {
    if (!e.path().filename().string().starts_with("train.")) continue;
    ++earlier;
    CHECK(nlohmann::json::parse(read_text(e.path() / "audit.json"))["audit_id"] == first_id);
  }
  CHECK(earlier == 1);
  // An explicit --out keeps the strict rule: a folder holding an audit is refused (exit 2).
  const auto explicit_out =
      run_in(dir, "exec --runs 2 --out repro-audit-out/train -- /usr/bin/python3 train.py");
  CHECK(explicit_out.exit_code == 2);
  CHECK_THAT(explicit_out.err, Contains("holds another audit"));
}

TEST_CASE("exec: seeded runs of a script are bitwise identical", "[cli][exec]") {
  RecorderOnPath path;
  TempDir dir;
  const auto r =
      exec(dir, script("repro_audit.seed_everything()"),
           "--runs 3 --json " + quoted(dir.path() / "r.json") + " --junit " +
               quoted(dir.path() / "r.xml") + " --html " + quoted(dir.path() / "r.html"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  // No mode was chosen: the header says what the script set (issue 40).
  CHECK_THAT(r.out,
             Contains("repro-audit: train, 3 runs, torch.use_deterministic_algorithms off\n"));
  CHECK_THAT(r.out, !Contains("mode nondeterministic"));
  CHECK_THAT(r.out, Contains("BITWISE IDENTICAL: all 3 same-seed runs"));
  const auto report = nlohmann::json::parse(read_text(dir.path() / "r.json"));
  CHECK(report["verdict"]["identical"] == true);
  CHECK(report["audit_folders"][0]["missing_runs"].empty());
  CHECK_THAT(read_text(dir.path() / "r.xml"), Contains("name=\"1 verdict\""));
  CHECK_THAT(read_text(dir.path() / "r.html"), Contains("<svg"));
}

TEST_CASE("exec: unseeded runs part at their initial weights", "[cli][exec]") {
  RecorderOnPath path;
  TempDir dir;
  const auto r =
      exec(dir, script("# not seeded"), "--runs 2 --json " + quoted(dir.path() / "r.json"));
  INFO(r.err);
  CHECK(r.exit_code == 1);
  const auto report = nlohmann::json::parse(read_text(dir.path() / "r.json"));
  CHECK(report["first_divergence"]["category"] == "initial_weights");
  // Said plainly: what the user got wrong.
  CHECK_THAT(r.out, Contains("the same-seed runs start from different weights: they are not "
                             "seeded alike"));
}

TEST_CASE("exec: a run-dependent step is found at its step and parameter", "[cli][exec]") {
  RecorderOnPath path;
  TempDir dir;
  // Run 1 nudges the last layer's bias after step 2's update: what a racing kernel would do.
  const std::string nudge =
      "    if os.environ.get('REPRO_AUDIT_RUN') == '1' and step == 2:\n"
      "        with torch.no_grad(): model[2].bias[0] += 1e-6\n";
  const auto r = exec(dir, script("repro_audit.seed_everything()", nudge), "--runs 2 --json -");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report["first_divergence"]["step"] == 2);
  CHECK(report["first_divergence"]["category"] == "weights");
  CHECK(report["first_divergence"]["tensor"] == "2.bias");
  CHECK(report["first_divergence"]["runs_differing"] == nlohmann::json::array({1}));
}

TEST_CASE("exec: a failing command is exit 3, named with its output", "[cli][exec]") {
  RecorderOnPath path;
  TempDir dir;
  const auto r =
      exec(dir, "import sys\nprint('no data here', file=sys.stderr)\nsys.exit(2)\n", "--runs 2");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Contains("run 0: the command ended with exit status 2"));
  CHECK_THAT(r.err, Contains("no data here"));
  // A command that runs but records nothing: exit 3 too, saying what is missing.
  TempDir other;
  const auto silent = exec(other, "print('trained')\n", "--runs 2");
  CHECK(silent.exit_code == 3);
  CHECK_THAT(silent.err, Contains("wrote no trace run-000.trace.jsonl"));
}

TEST_CASE("exec: --seeds both gives the same and different groups' statistics", "[cli][exec]") {
  RecorderOnPath path;
  TempDir dir;
  const auto r =
      exec(dir, script("repro_audit.seed_everything()"), "--runs 2 --seeds both --json -");
  INFO(r.err);
  CHECK(r.exit_code == 0);  // the same-seed runs agree
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report["statistics"].contains("same"));
  CHECK(report["statistics"].contains("different"));
  CHECK(report["statistics"]["different"]["final_loss"]["n"] == 2);
  CHECK(report["runs"].size() == 4);
}

TEST_CASE("exec: shards share one folder, and compare reports on it", "[cli][exec]") {
  RecorderOnPath path;
  TempDir dir;
  const auto py = dir.write("train.py", script("repro_audit.seed_everything()"));
  const std::string out = quoted(dir.path() / "out");
  const auto shard = [&](const std::string& which, const std::string& more = "") {
    return run_cli("exec --runs 3 --shard " + which + more + " --out " + out +
                   " -- /usr/bin/python3 " + quoted(py));
  };
  const auto first = shard("0/2");
  INFO(first.err);
  CHECK(first.exit_code == 0);
  CHECK_THAT(first.out, Contains("shard 0/2: run(s) 0, 2 of 3 planned"));
  CHECK_THAT(first.out, Contains("audit not complete yet: run(s) 1 of other shards missing"));
  const auto second = shard("1/2");
  CHECK(second.exit_code == 0);
  CHECK_THAT(second.out, Contains("audit complete: every planned run has a whole trace"));
  const auto report = run_cli("compare " + out);
  CHECK(report.exit_code == 0);
  CHECK_THAT(report.out, Contains("BITWISE IDENTICAL: all 3 same-seed runs"));

  // A shard makes no report, and never removes the other shards' runs.
  const auto with_report = shard("0/2", " --json " + quoted(dir.path() / "r.json"));
  CHECK(with_report.exit_code == 2);
  CHECK_THAT(with_report.err, Contains("a shard makes no report"));
  const auto overwrite = shard("0/2", " --overwrite");
  CHECK(overwrite.exit_code == 2);
  CHECK_THAT(overwrite.err, Contains("a shard must not remove the runs of the others"));
  // Another shard count is another audit's plan: refused, naming the folder's.
  const auto other_count = shard("0/3");
  CHECK(other_count.exit_code == 2);
}

TEST_CASE("exec: options of the command after -- stay the command's after a plan option",
          "[cli][exec]") {
  // --tensor-digests takes one plan per occurrence (commas inside it): a value list that ran on
  // took the "--" and then the script's own options as exec's (exit 2, "--epochs" unknown).
  RecorderOnPath path;
  TempDir dir;
  const auto py =
      dir.write("train.py", "import sys\nassert sys.argv[1:] == ['--epochs', '1'], sys.argv\n" +
                                script("import torch\ntorch.manual_seed(0)"));
  const auto r =
      run_cli("exec --runs 2 --tensor-digests every:2,3 --out " + quoted(dir.path() / "out") +
              " -- /usr/bin/python3 " + quoted(py) + " --epochs 1");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto manifest = nlohmann::json::parse(read_text(dir.path() / "out" / "audit.json"));
  CHECK_THAT(manifest.at("tensor_digests").get<std::string>(), Contains("every:2"));
}
