// --shard through the binary: K/N and auto (a Slurm job array's environment), what a shard
// prints, and the report of a sharded folder: incomplete (exit 4, the unfinished shards named in
// the text and as a failing JUnit case), diverged (exit 1 even when incomplete), complete (the
// single-process report). The real cluster: tests/slurm/slurm_shards_test.sh.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "support/report_json.h"
#include "support/text_lines.h"

using ra::test::quoted;
using ra::test::run_cli;
using ra::test::TempDir;

namespace {

using ra::test::contains;

std::string write_shard_spec(const TempDir& dir) {
  const auto spec = nlohmann::json::parse(R"({
    "name": "cli-shard", "seed": 4, "threads": 1, "device": "cpu",
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 8, 8], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 1}})");
  return quoted(dir.write("spec.json", spec.dump()));
}

// The environment of a Slurm array task for the length of a scope.
class SlurmTask {
 public:
  SlurmTask(int id, int count) {
    setenv("SLURM_ARRAY_TASK_ID", std::to_string(id).c_str(), 1);
    setenv("SLURM_ARRAY_TASK_COUNT", std::to_string(count).c_str(), 1);
    setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
    setenv("SLURM_ARRAY_TASK_MAX", std::to_string(count - 1).c_str(), 1);
    setenv("SLURM_ARRAY_TASK_STEP", "1", 1);
  }
  ~SlurmTask() {
    for (const char* name :
         {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
          "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP"})
      unsetenv(name);
  }
  SlurmTask(const SlurmTask&) = delete;
  SlurmTask& operator=(const SlurmTask&) = delete;
};

}  // namespace

TEST_CASE("a sharded audit through the binary: incomplete, then the single-process report",
          "[cli][shard]") {
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("JOB_COMPLETION_INDEX");
  TempDir dir;
  const std::string spec = write_shard_spec(dir);
  const auto out = dir.path() / "sharded";

  const auto no_env = run_cli("run " + spec + " --runs 3 --shard auto --out " + quoted(out));
  CHECK(no_env.exit_code == 2);
  CHECK(contains(no_env.err,
                 "found neither a Slurm job array (SLURM_ARRAY_TASK_ID) nor a Kubernetes "
                 "Indexed Job (JOB_COMPLETION_INDEX)"));
  const auto with_report =
      run_cli("run " + spec + " --runs 3 --shard 0/3 --json x.json --out " + quoted(out));
  CHECK(with_report.exit_code == 2);
  CHECK(contains(with_report.err, "a shard makes no report"));

  {
    const SlurmTask task(0, 3);
    const auto first = run_cli("run " + spec + " --runs 3 --shard auto --out " + quoted(out));
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    CHECK(contains(first.err, "shard 0/3 started audit"));
    CHECK(contains(first.out, "shard 0/3: run(s) 0 of 3 planned\n"));
    CHECK(contains(first.out, "audit not complete yet: run(s) 1, 2 of other shards missing"));
  }
  // A shard that plans another audit is refused, naming what differs.
  const auto other = run_cli("run " + spec + " --runs 4 --shard 1/3 --out " + quoted(out));
  CHECK(other.exit_code == 2);
  CHECK(contains(other.err, "runs: 3 planned in the folder, 4 planned requested"));
  const auto second = run_cli("run " + spec + " --runs 3 --shard 1/3 --out " + quoted(out));
  REQUIRE(second.exit_code == 0);
  CHECK(contains(second.err, "shard 1/3 joined audit"));

  const auto junit = dir.path() / "junit.xml";
  const auto partial = run_cli("compare " + quoted(out) + " --junit " + quoted(junit));
  CHECK(partial.exit_code == 4);
  CHECK(contains(partial.out,
                 "INCOMPLETE AUDIT (2 of 3 planned runs; the verdict is over these "
                 "only): BITWISE IDENTICAL: all 2 same-seed runs"));
  CHECK(contains(partial.out,
                 "shard 2/3 unfinished: run(s) 2 missing; not running (failed, cancelled "
                 "or not started)"));
  CHECK(contains(partial.out, "missing run 2 (shard 2/3): no trace"));
  const std::string xml = ra::test::read_text(junit);
  CHECK(contains(xml, "name=\"2 complete audit\""));
  CHECK(contains(xml, "type=\"incomplete\""));

  const auto last = run_cli("run " + spec + " --runs 3 --shard 2/3 --out " + quoted(out));
  REQUIRE(last.exit_code == 0);
  CHECK(contains(last.out, "audit complete: every planned run has a whole trace"));
  const auto merged = run_cli("compare " + quoted(out) + " --json -");
  CHECK(merged.exit_code == 0);
  const auto single =
      run_cli("run " + spec + " --runs 3 --out " + quoted(dir.path() / "single") + " --json -");
  CHECK(single.exit_code == 0);
  const auto merged_report = nlohmann::json::parse(merged.out);
  CHECK(merged_report["verdict"]["complete"] == true);
  CHECK(ra::test::without_paths_and_time(merged_report) ==
        ra::test::without_paths_and_time(nlohmann::json::parse(single.out)));
}

TEST_CASE("an incomplete sharded audit that diverged exits 1: a divergence is final",
          "[cli][shard]") {
  TempDir dir;
  const std::string spec = write_shard_spec(dir);
  const auto out = dir.path() / "sharded";
  const std::string fault = " --inject-fault run=1,step=1,tensor=dense_0.weight,bit=20";
  for (const char* shard : {"0/3", "1/3"}) {
    const auto r =
        run_cli("run " + spec + " --runs 3 --shard " + shard + " --out " + quoted(out) + fault);
    REQUIRE(r.exit_code == 0);
  }
  const auto c = run_cli("compare " + quoted(out));
  CHECK(c.exit_code == 1);
  CHECK(contains(c.out,
                 "INCOMPLETE AUDIT (2 of 3 planned runs; the verdict is over these only): "
                 "DIVERGED"));
}
