// What a hostile probe of the audit folder found, each through the binary as it was found (each
// failed before the fix): report paths over the audit's own files, symbolic links inside the
// folder, crafted manifest counts, a FIFO as a lock, a stdout whose reader has gone, a resume on
// another instruction set, a foreign audit.json under --overwrite, out-of-range numbers from the
// command line and from a Slurm environment.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
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

std::string write_hostile_folder_spec(const TempDir& dir) {
  const auto spec = nlohmann::json::parse(R"({
    "name": "hostile", "seed": 4, "threads": 1, "device": "cpu",
    "data": {"train": {"format": "random", "samples": 32, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 1}})");
  return quoted(dir.write("spec.json", spec.dump()));
}

// A finished 2-run audit in dir/out, with snapshots every step; its folder.
fs::path audit(const TempDir& dir, const std::string& spec, const std::string& extra = "") {
  const fs::path out = dir.path() / "out";
  const auto r =
      run_cli("run " + spec + " --runs 2 --snapshot-every 1 --out " + quoted(out) + " " + extra);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

// Runs the binary with stdout a pipe whose reader has already gone: every write to it fails
// (EPIPE, or SIGPIPE where not ignored). Returns the exit code (128 + signal when killed).
int run_with_closed_stdout(const std::string& args) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDERR_FILENO);
    const std::string command = std::string("exec '") + REPRO_AUDIT_BINARY + "' " + args;
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool cpu_has(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
}

}  // namespace

TEST_CASE("a report path over a file of the audit is refused before any work", "[cli][hostile]") {
  TempDir dir;
  const std::string spec = write_hostile_folder_spec(dir);
  const fs::path out = audit(dir, spec);
  const std::string trace = read_text(out / "run-001.trace.jsonl");
  for (const std::string option : {"--junit", "--json", "--html"}) {
    const auto r = run_cli("compare " + quoted(out) + " " + option + " " +
                           quoted(out / "run-001.trace.jsonl"));
    INFO(option << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("it is a file of the audit in"));
  }
  // A snapshot, the manifest, the compared trace itself, two reports into one file.
  CHECK(run_cli("compare " + quoted(out) + " --json " +
                quoted(out / "run-000" / "weights-final.safetensors"))
            .exit_code == 2);
  CHECK(run_cli("compare " + quoted(out / "run-000.trace.jsonl") + " " +
                quoted(out / "run-001.trace.jsonl") + " --json " +
                quoted(out / "run-000.trace.jsonl"))
            .exit_code == 2);
  const auto twice = run_cli("compare " + quoted(out) + " --json " + quoted(dir.path() / "r") +
                             " --junit " + quoted(dir.path() / "r"));
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.err, Contains("is named twice"));
  const auto run = run_cli("run " + spec + " --runs 2 --out " + quoted(out) + " --resume --json " +
                           quoted(out / "audit.json"));
  CHECK(run.exit_code == 2);
  // Nothing was lost: the audit still compares.
  CHECK(read_text(out / "run-001.trace.jsonl") == trace);
  CHECK(run_cli("compare " + quoted(out)).exit_code == 0);
}

TEST_CASE("a symbolic link inside the audit folder is never followed", "[cli][hostile]") {
  TempDir dir;
  const std::string spec = write_hostile_folder_spec(dir);
  const fs::path out = audit(dir, spec);
  // run-001/ replaced by a link to someone else's folder holding files of snapshot names.
  const fs::path elsewhere = dir.path() / "elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "batches.json") << "theirs";
  std::ofstream(elsewhere / "weights-final.safetensors") << "theirs";
  fs::remove_all(out / "run-001");
  fs::remove(out / "run-001.trace.jsonl");  // so that --resume would retrain run 1
  fs::create_directory_symlink(elsewhere, out / "run-001");
  for (const std::string how : {"--resume", "--overwrite"}) {
    const auto r =
        run_cli("run " + spec + " --runs 2 --snapshot-every 1 --out " + quoted(out) + " " + how);
    INFO(how << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("run-001 (a symbolic link, not a folder)"));
    CHECK(read_text(elsewhere / "batches.json") == "theirs");
    CHECK(read_text(elsewhere / "weights-final.safetensors") == "theirs");
    CHECK(fs::is_symlink(out / "run-001"));
  }
  // compare names it and reads nothing through it.
  const auto c = run_cli("compare " + quoted(out));
  CHECK_THAT(c.out, Contains("run-001 (a symbolic link, not a folder)"));
}

TEST_CASE("crafted manifest counts are refused, not looped over", "[cli][hostile]") {
  TempDir dir;
  const fs::path out = audit(dir, write_hostile_folder_spec(dir));
  const nlohmann::json manifest = nlohmann::json::parse(read_text(out / "audit.json"));
  for (const nlohmann::json& shards : {nlohmann::json(2147483647), nlohmann::json(2000000000),
                                       nlohmann::json(4294967296ull), nlohmann::json(3)}) {
    nlohmann::json edited = manifest;
    edited["shards"] = shards;
    std::ofstream(out / "audit.json") << edited.dump();
    const auto r = run_cli("compare " + quoted(out));
    INFO("shards " << shards.dump() << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("shards"));
  }
}

TEST_CASE("a lock file that is a FIFO is refused at once, by compare and run", "[cli][hostile]") {
  TempDir dir;
  const std::string spec = write_hostile_folder_spec(dir);
  const fs::path out = audit(dir, spec);
  // As a sharded audit's folder, whose shard locks compare probes too.
  nlohmann::json manifest = nlohmann::json::parse(read_text(out / "audit.json"));
  manifest["shards"] = 1;
  std::ofstream(out / "audit.json") << manifest.dump();
  for (const std::string name : {"audit.lock", "audit.shard-000.lock"}) {
    REQUIRE(::mkfifo((out / name).c_str(), 0600) == 0);
    const auto c = run_cli("compare " + quoted(out));
    INFO(name << ": " << c.err);
    CHECK(c.exit_code == 2);
    CHECK_THAT(c.err, Contains("FIFO"));
    fs::remove(out / name);
  }
  REQUIRE(::mkfifo((out / "audit.lock").c_str(), 0600) == 0);
  const auto r = run_cli("run " + spec + " --runs 2 --out " + quoted(out) + " --resume");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("FIFO"));
}

TEST_CASE("a stdout whose reader has gone loses no report file and keeps the verdict's code",
          "[cli][hostile]") {
  TempDir dir;
  const fs::path out = audit(dir, write_hostile_folder_spec(dir));
  const fs::path json = dir.path() / "r.json", junit = dir.path() / "r.xml";
  const int code = run_with_closed_stdout("compare " + quoted(out) + " --json " + quoted(json) +
                                          " --junit " + quoted(junit));
  CHECK(code == 0);  // the runs are identical
  CHECK(nlohmann::json::parse(read_text(json)).at("verdict").at("identical") == true);
  CHECK_THAT(read_text(junit), Contains("</testsuites>"));
}

TEST_CASE("resuming on another CPU instruction set is refused, naming it", "[cli][hostile]") {
  if (!cpu_has("avx2") || !cpu_has("fma")) {
    WARN("skipped: this CPU has no AVX2 + FMA, the other instruction set of the test");
    return;
  }
  TempDir dir;
  const std::string spec = write_hostile_folder_spec(dir);
  setenv("REPRO_AUDIT_ISA", "portable", 1);
  const fs::path out = audit(dir, spec);
  fs::remove(out / "run-001.trace.jsonl");  // interrupted
  setenv("REPRO_AUDIT_ISA", "avx2", 1);
  const auto r =
      run_cli("run " + spec + " --runs 2 --snapshot-every 1 --out " + quoted(out) + " --resume");
  unsetenv("REPRO_AUDIT_ISA");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("runtime cpu_gemm_kernel: \"portable\" in the folder, \"avx2-fma\""));
  // On the instruction set it was started with, it resumes.
  setenv("REPRO_AUDIT_ISA", "portable", 1);
  const auto ok =
      run_cli("run " + spec + " --runs 2 --snapshot-every 1 --out " + quoted(out) + " --resume");
  unsetenv("REPRO_AUDIT_ISA");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("overwriting leaves an audit.json that is no manifest alone", "[cli][hostile]") {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  std::ofstream(out / "audit.json") << R"({"my": "own file"})";
  const auto r = run_cli("run " + write_hostile_folder_spec(dir) + " --runs 2 --out " +
                         quoted(out) + " --overwrite");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("is not a repro-audit manifest"));
  CHECK(read_text(out / "audit.json") == R"({"my": "own file"})");
}

TEST_CASE("numbers past their limits are refused, not clamped or wrapped", "[cli][hostile]") {
  TempDir dir;
  const std::string spec = write_hostile_folder_spec(dir);
  const auto every = run_cli("run " + spec + " --runs 1 --out " + quoted(dir.path() / "a") +
                             " --snapshot-every 99999999999999999999");
  CHECK(every.exit_code == 2);
  CHECK_THAT(every.err, Contains("99999999999999999999"));
  setenv("SLURM_ARRAY_TASK_ID", "0", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
  setenv("SLURM_ARRAY_TASK_MAX", "9223372036854775807", 1);
  const auto slurm =
      run_cli("run " + spec + " --runs 1 --out " + quoted(dir.path() / "b") + " --shard auto");
  for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"})
    unsetenv(v);
  INFO(slurm.err);
  CHECK(slurm.exit_code == 2);
  CHECK_THAT(slurm.err, Contains("SLURM_ARRAY_TASK_MAX is 9223372036854775807, above 4000000"));
  CHECK_THAT(slurm.err, !Contains("-9223372036854775808"));
}
