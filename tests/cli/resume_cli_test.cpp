// End-to-end: `train --interrupt-at` / `--resume-from` in two processes, `run --interrupt-at` at
// 1, 2 and 3 points, each test-only restore fault named in the report, and a kill -9 while a
// checkpoint is written or restored left for `run --resume` to finish (docs/resume.md).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

using ra::test::run_cli;
using ra::test::source_path;
using ra::test::TempDir;

namespace {

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto pos = t.rfind('\n');
  return pos == std::string::npos ? t : t.substr(pos + 1);
}

const std::string kSpec =
    ra::test::quoted(source_path("configs/quick.json"));  // 2 epochs of 16 steps

// The differing pieces of a report's resume entry: "weights", "rng_stream:data/order", ...
std::vector<std::string> pieces(const nlohmann::json& resume) {
  std::vector<std::string> out;
  for (const auto& p : resume.at("differing")) {
    out.push_back(p.at("piece").get<std::string>() +
                  (p.contains("stream") ? ":" + p.at("stream").get<std::string>() : ""));
  }
  return out;
}

}  // namespace

TEST_CASE("train --resume-from in a new process ends with the uninterrupted run's bits", "[cli]") {
  const TempDir dir;
  const auto whole = run_cli("train " + kSpec);
  const auto stopped = run_cli("train " + kSpec + " --interrupt-at 20 --checkpoint-dir " +
                               ra::test::quoted(dir.path()));
  REQUIRE(stopped.exit_code == 0);
  const std::string manifest = (dir.path() / "checkpoint-step-20.json").string();
  REQUIRE(last_line(stopped.out) == "interrupted steps=20 checkpoint=" + manifest);
  const auto resumed = run_cli("train " + kSpec + " --resume-from " + ra::test::quoted(manifest));
  REQUIRE(resumed.exit_code == 0);
  REQUIRE(last_line(resumed.out) == last_line(whole.out));
  // The spec must be the checkpoint's.
  const auto other =
      run_cli("train " + ra::test::quoted(source_path("configs/single-conv-random.json")) +
              " --resume-from " + ra::test::quoted(manifest));
  REQUIRE(other.exit_code == 2);
  REQUIRE(other.err.find("checkpoint of spec 'quick'") != std::string::npos);
}

TEST_CASE("train --resume-from refuses a position that does not add up", "[cli]") {
  // Issue 61: a checkpoint whose step disagreed with its epoch, batch and the optimizer's
  // iterations was restored. quick.json: 16 batches an epoch; stopped after step 20 (epoch 1,
  // batch 4).
  const TempDir dir;
  REQUIRE(run_cli("train " + kSpec + " --interrupt-at 20 --checkpoint-dir " +
                  ra::test::quoted(dir.path()))
              .exit_code == 0);
  const std::filesystem::path manifest = dir.path() / "checkpoint-step-20.json";
  const nlohmann::json whole = nlohmann::json::parse(ra::test::read_text(manifest));
  REQUIRE(whole.at("position").at("epoch") == 1);
  const auto refused = [&](const char* what, const std::function<void(nlohmann::json&)>& edit) {
    INFO(what);
    nlohmann::json m = whole;
    edit(m);
    std::ofstream(manifest, std::ios::trunc) << m.dump();
    const auto r = run_cli("train " + kSpec + " --resume-from " + ra::test::quoted(manifest));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("checkpoint position (step") != std::string::npos);
  };
  refused("step", [](nlohmann::json& m) { m["position"]["step"] = 21; });
  refused("batch", [](nlohmann::json& m) { m["position"]["batch"] = 5; });
  refused("epoch steps", [](nlohmann::json& m) { m["position"]["epoch_steps"] = 3; });
  refused("iterations", [](nlohmann::json& m) { m["optimizer"]["iterations"] = 25; });
  std::ofstream(manifest, std::ios::trunc) << whole.dump();
  CHECK(run_cli("train " + kSpec + " --resume-from " + ra::test::quoted(manifest)).exit_code == 0);
}

TEST_CASE("run --interrupt-at at 1, 2 and 3 points: every resume exact, runs identical", "[cli]") {
  // Mid-epoch, at the end of epoch 0 (step 16) and in epoch 1.
  for (const std::vector<int>& steps : {std::vector<int>{7}, {7, 16}, {3, 16, 25}}) {
    std::string stops;
    for (const int step : steps) stops += " --interrupt-at " + std::to_string(step);
    INFO(stops);
    const TempDir dir;
    const auto r = run_cli("run " + kSpec + " --runs 2" + stops + " --out " +
                           ra::test::quoted(dir.path() / "out") + " --json -");
    REQUIRE(r.exit_code == 0);
    const auto report = nlohmann::json::parse(r.out);
    REQUIRE(report.at("verdict").at("identical") == true);
    const auto& resumes = report.at("resumes");
    REQUIRE(resumes.size() == steps.size());
    for (std::size_t i = 0; i < resumes.size(); ++i) {
      const auto& resume = resumes[i];
      REQUIRE(resume.at("run") == 1);
      REQUIRE(resume.at("step") == steps[i]);
      REQUIRE(resume.at("exact") == true);
      REQUIRE(resume.at("first_divergence").is_null());
      REQUIRE(resume.at("checkpoint").at("bytes").get<std::uint64_t>() > 0);
    }
  }
}

TEST_CASE("each piece a restore leaves out is named, with the divergence after it", "[cli]") {
  // Step 20 is in epoch 1: the data order's stream left at 0 draws epoch 0's order.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"weights", {"weights"}},
      {"optimizer", {"optimizer_state"}},
      {"schedule", {"schedule"}},
      {"rng", {"rng_stream:data/order", "rng_stream:dropout/dropout_0", "next_batch"}},
      {"position", {"next_batch"}}};
  for (const auto& [skip, expected] : cases) {
    INFO(skip);
    const TempDir dir;
    const auto r = run_cli("run " + kSpec + " --runs 2 --interrupt-at 20 --test-skip-restore " +
                           skip + " --out " + ra::test::quoted(dir.path() / "out") + " --json -");
    REQUIRE(r.exit_code == 1);
    const auto resume = nlohmann::json::parse(r.out).at("resumes").at(0);
    REQUIRE(resume.at("exact") == false);
    REQUIRE(pieces(resume) == expected);
    REQUIRE(resume.at("first_divergence").at("step") == 20);
    // The text report words it as the fix.
    const auto text = run_cli("compare " + ra::test::quoted(dir.path() / "out"));
    REQUIRE(text.out.find("resume of run 1 at step 20: NOT exact") != std::string::npos);
  }
  const TempDir dir;
  const auto text = run_cli("run " + kSpec + " --runs 2 --interrupt-at 20 --test-skip-restore rng" +
                            " --out " + ra::test::quoted(dir.path() / "out"));
  REQUIRE(text.out.find("the random stream 'dropout/dropout_0' was not restored: the dropout "
                        "masks after step 20 differ") != std::string::npos);
}

TEST_CASE("a kill -9 while a checkpoint is written or restored leaves an audit --resume finishes",
          "[cli]") {
  for (const std::string& moment : {"checkpoint", "restore"}) {
    INFO(moment);
    const TempDir dir;
    const std::string out = ra::test::quoted(dir.path() / "out");
    const std::string audit = "run " + kSpec + " --runs 2 --interrupt-at 10 --out " + out;
    const auto killed = run_cli(audit + " --test-kill-at " + moment);
    REQUIRE(killed.exit_code == 128 + 9);
    // The audit's steps are its manifest's: --resume with others is refused.
    const auto other =
        run_cli("run " + kSpec + " --runs 2 --interrupt-at 11 --out " + out + " --resume");
    REQUIRE(other.exit_code == 2);
    REQUIRE(other.err.find("--interrupt-at steps") != std::string::npos);
    const auto resumed = run_cli(audit + " --resume --json -");
    REQUIRE(resumed.exit_code == 0);
    const auto report = nlohmann::json::parse(resumed.out);
    REQUIRE(report.at("resumes").at(0).at("exact") == true);
  }
}

TEST_CASE("run --interrupt-at refuses steps outside the run and unknown restore faults", "[cli]") {
  const TempDir dir;
  const auto late = run_cli("run " + kSpec + " --runs 2 --interrupt-at 32 --out " +
                            ra::test::quoted(dir.path() / "a"));
  REQUIRE(late.exit_code == 2);
  REQUIRE(late.err.find("can stop after step 1 to 31") != std::string::npos);
  const auto unknown = run_cli("run " + kSpec +
                               " --runs 2 --interrupt-at 3 --test-skip-restore "
                               "nothing --out " +
                               ra::test::quoted(dir.path() / "b"));
  REQUIRE(unknown.exit_code == 2);
}
