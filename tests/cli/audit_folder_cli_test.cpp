// An audit folder holds one audit, through the binary: a second audit into it is refused with
// guidance, --overwrite replaces only the tool's files, two audits at once cannot share it, and an
// audit killed with SIGKILL is finished by --resume with the uninterrupted audit's report.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_runner.h"

extern char** environ;

using ra::test::run_cli;
using ra::test::TempDir;
namespace fs = std::filesystem;

namespace {

using ra::test::quoted;

// A small spec. With `slow`, a few hundred steps per run, so that a run lasts long enough (a
// fraction of a second) to be caught in the middle; else a few steps.
fs::path write_folder_spec(const TempDir& dir, bool slow = false) {
  auto spec = nlohmann::json::parse(R"({
    "name": "folder-cli", "seed": 11, "device": "cpu", "threads": 1,
    "data": {"train": {"format": "random", "samples": 4096, "shape": [1, 12, 12], "classes": 4},
             "eval": {"format": "random", "samples": 64, "shape": [1, 12, 12], "classes": 4,
                      "seed": 2},
             "batch_size": 32},
    "model": {"input": [1, 12, 12], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "dropout", "rate": 0.2},
      {"type": "flatten"}, {"type": "dense", "units": 4}]},
    "optimizer": {"type": "sgd", "lr": 0.02, "momentum": 0.9},
    "train": {"epochs": 6}})");
  if (!slow) {
    spec["data"]["train"]["samples"] = 128;
    spec["train"]["epochs"] = 2;
  }
  return dir.write("spec.json", spec.dump());
}

// The binary started in the background (posix_spawn), its output in files; killed (SIGKILL) and
// reaped by the destructor if still running.
class Background {
 public:
  Background(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
    std::vector<std::string> words{REPRO_AUDIT_BINARY};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(rc == 0);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() {
    if (pid_ > 0 && !status_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  bool running() {
    if (status_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return !status_;
  }
  // The exit code, or 128 + signal.
  int wait() {
    if (!status_) {
      int status = 0;
      waitpid(pid_, &status, 0);
      status_ = status;
    }
    return WIFEXITED(*status_) ? WEXITSTATUS(*status_) : 128 + WTERMSIG(*status_);
  }
  int kill_hard() {
    kill(pid_, SIGKILL);
    return wait();
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Polls (every 2 ms, up to 60 s) until `ready` or the process ended.
template <class Ready>
bool wait_for(Background& process, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    if (!process.running()) return ready();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// The report less what legitimately differs between two audits of one spec: wall-clock timings,
// file names, the audit id.
nlohmann::json without_timings(nlohmann::json report) {
  for (auto& run : report.at("runs")) {
    run.erase("source");
    run.erase("median_step_ms");
    run.erase("total_seconds");
    run.erase("recording_fraction");
  }
  for (auto& [group, stats] : report.at("statistics").items()) stats.erase("median_step_ms");
  for (auto& folder : report.at("audit_folders")) {
    folder.erase("audit_id");
    folder.erase("folder");
  }
  return report;
}

}  // namespace

TEST_CASE("run into a folder holding an audit exits 2 with guidance, and overwrite replaces it",
          "[cli][folder]") {
  TempDir dir;
  const auto spec = quoted(write_folder_spec(dir));
  const auto out = dir.path() / "out";
  REQUIRE(run_cli("run " + spec + " --runs 1 --out " + quoted(out) + " --allow-empty").exit_code ==
          0);
  dir.write("out/notes.txt", "the user's");

  const auto again = run_cli("run " + spec + " --runs 1 --out " + quoted(out));
  REQUIRE(again.exit_code == 2);
  REQUIRE(again.err.find("output folder " + out.string() + " holds another audit") !=
          std::string::npos);
  for (const char* hint : {"--resume", "--overwrite", "another --out"}) {
    INFO(hint);
    REQUIRE(again.err.find(hint) != std::string::npos);
  }

  const auto overwritten = run_cli("run " + spec + " --runs 2 --overwrite --out " + quoted(out) +
                                   " --json " + quoted(out / "report.json"));
  INFO(overwritten.err);
  REQUIRE(overwritten.exit_code == 0);
  REQUIRE(overwritten.err.find("left in place, not repro-audit's: notes.txt") != std::string::npos);
  REQUIRE(ra::test::read_text(out / "notes.txt") == "the user's");
  const auto manifest = nlohmann::json::parse(ra::test::read_text(out / "audit.json"));
  REQUIRE(manifest.at("runs").size() == 2);
  REQUIRE(manifest.at("report_files") == nlohmann::json::array({"report.json"}));
  // compare DIR reports exactly the manifest's runs.
  const auto compared = run_cli("compare " + quoted(out) + " --json -");
  REQUIRE(compared.exit_code == 0);
  const auto report = nlohmann::json::parse(compared.out);
  REQUIRE(report.at("runs").size() == 2);
  REQUIRE(report.at("audit_folders")[0].at("audit_id") == manifest.at("audit_id"));

  // --overwrite again removes the report it wrote there too; --resume and --overwrite exclude.
  REQUIRE(run_cli("run " + spec + " --runs 1 --overwrite --allow-empty --out " + quoted(out))
              .exit_code == 0);
  REQUIRE_FALSE(fs::exists(out / "report.json"));
  REQUIRE(fs::exists(out / "notes.txt"));
  const auto both = run_cli("run " + spec + " --resume --overwrite --out " + quoted(out));
  REQUIRE(both.exit_code == 2);
  REQUIRE(both.err.find("excludes") != std::string::npos);
}

TEST_CASE("a second audit on a folder in use exits 2 at once, naming the folder and pid",
          "[cli][folder]") {
  TempDir dir;
  const auto spec = write_folder_spec(dir);
  const auto out = dir.path() / "out";
  Background first({"run", spec.string(), "--runs", "3", "--out", out.string()},
                   dir.path() / "first.out", dir.path() / "first.err");
  REQUIRE(wait_for(first, [&] { return fs::exists(out / "audit.json"); }));
  // Stopped (SIGSTOP) while it holds the folder, so that it cannot finish meanwhile.
  REQUIRE(kill(first.pid(), SIGSTOP) == 0);

  const auto started = std::chrono::steady_clock::now();
  const auto second = run_cli("run " + quoted(spec) + " --runs 3 --out " + quoted(out));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const bool first_still_running = first.running();
  REQUIRE(kill(first.pid(), SIGCONT) == 0);
  INFO(second.err);
  REQUIRE(second.exit_code == 2);
  REQUIRE(second.err.find("audit folder " + out.string() + " is in use by another audit (pid " +
                          std::to_string(first.pid()) + ")") != std::string::npos);
  // At once: it did not wait for the first audit (nor load data or train).
  REQUIRE(first_still_running);
  REQUIRE(seconds < 5.0);
  // The first audit is undisturbed.
  REQUIRE(first.wait() == 0);
  REQUIRE(run_cli("compare " + quoted(out)).exit_code == 0);
}

TEST_CASE("an audit killed with SIGKILL is finished by --resume with the same report",
          "[cli][folder]") {
  TempDir dir;
  const auto spec = write_folder_spec(dir, /*slow=*/true);
  const std::vector<std::string> audit{"run", spec.string(), "--runs", "3", "--snapshot-epochs"};

  // The uninterrupted audit.
  const auto whole = run_cli("run " + quoted(spec) + " --runs 3 --snapshot-epochs --out " +
                             quoted(dir.path() / "whole") + " --json -");
  INFO(whole.err);
  REQUIRE(whole.exit_code == 0);

  // The same audit, killed once run 0 is whole and run 1 is in its second epoch.
  const auto out = dir.path() / "killed";
  std::vector<std::string> args = audit;
  args.insert(args.end(), {"--out", out.string()});
  Background killed(args, dir.path() / "killed.out", dir.path() / "killed.err");
  REQUIRE(wait_for(killed, [&] {
    return fs::exists(out / "run-000.trace.jsonl") &&
           fs::exists(out / "run-001" / "weights-epoch-0.safetensors");
  }));
  REQUIRE(killed.kill_hard() == 128 + SIGKILL);
  REQUIRE_FALSE(fs::exists(out / "run-001.trace.jsonl"));  // caught mid-run
  REQUIRE_FALSE(fs::exists(out / "run-002.trace.jsonl"));

  // compare names what is missing; a new audit into the folder is refused.
  const auto partial = run_cli("compare " + quoted(out) + " --json -");
  REQUIRE(partial.exit_code == 4);  // incomplete: a verdict over part of the audit only
  const auto partial_report = nlohmann::json::parse(partial.out);
  REQUIRE(partial_report.at("runs").size() == 1);
  REQUIRE(partial_report.at("audit_folders")[0].at("missing_runs").size() == 2);
  // Run 1's partial trace, written as it trained, is named with what it holds: its first epoch.
  const std::string why = partial_report.at("audit_folders")[0].at("missing_runs")[0].at("reason");
  INFO(why);
  REQUIRE(why.find("only the partial run-001.trace.jsonl.tmp-") != std::string::npos);
  REQUIRE(why.find(" steps recorded, no end record") != std::string::npos);
  REQUIRE(run_cli("run " + quoted(spec) + " --runs 3 --snapshot-epochs --out " + quoted(out))
              .exit_code == 2);
  // --resume with other options is refused, naming what differs.
  const auto other =
      run_cli("run " + quoted(spec) + " --runs 4 --snapshot-epochs --resume --out " + quoted(out));
  REQUIRE(other.exit_code == 2);
  REQUIRE(other.err.find("runs: 3 planned in the folder, 4 planned requested") !=
          std::string::npos);

  const std::string run0 = ra::test::read_text(out / "run-000.trace.jsonl");
  const auto resumed =
      run_cli("run " + quoted(spec) + " --runs 3 --snapshot-epochs --resume --out " + quoted(out) +
              " --json -");
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  REQUIRE(resumed.err.find("training run(s) 1, 2; whole: run(s) 0") != std::string::npos);
  REQUIRE(ra::test::read_text(out / "run-000.trace.jsonl") == run0);  // run 0 not retrained
  // Nothing of the killed attempt is left: no temporaries, no lock.
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    INFO(e.path());
    REQUIRE(e.path().filename().string().find(".tmp-") == std::string::npos);
  }
  REQUIRE_FALSE(fs::exists(out / "audit.lock"));

  const auto a = without_timings(nlohmann::json::parse(whole.out));
  const auto b = without_timings(nlohmann::json::parse(resumed.out));
  REQUIRE(a == b);
  REQUIRE(b.at("runs").size() == 3);
  REQUIRE(b.at("growth")[5].at("snapshot").is_object());  // snapshots of resumed runs measured
}
