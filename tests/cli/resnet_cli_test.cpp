// A ResNet v2 audited end to end (configs/resnet-tiny-synthetic.json: the layout of Keras'
// ResNet29v2 at depth 11, a quarter of its filters, on 8x8 synthetic images): batch
// normalisation, residual blocks with identity and strided projection shortcuts, global average
// pooling, and the running statistics compared as a category of their own.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using ra::test::quoted;
using ra::test::run_cli;
using ra::test::source_path;
using ra::test::TempDir;

namespace {

std::string tiny_resnet() {
  return ra::test::quoted(std::filesystem::path(source_path("configs/resnet-tiny-synthetic.json")));
}

// The JSON report of `run <tiny ResNet> <options> --out <dir>/out --json -`, which must exit with
// `exit_code`.
nlohmann::json audit_of_tiny_resnet(const TempDir& dir, const std::string& options, int exit_code) {
  const auto r = run_cli("run " + tiny_resnet() + " " + options + " --out " +
                         quoted(dir.path() / "out") + " --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == exit_code);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("run: a ResNet v2 audit with both seed kinds reports identity and the seed spread",
          "[cli][audit][resnet]") {
  TempDir dir;
  const auto report = audit_of_tiny_resnet(dir, "--runs 3 --seeds both", 0);
  CHECK(report.at("verdict").at("identical") == true);
  CHECK(report.at("runs").size() == 6);
  // Every category was compared, the batchnorm layers' running statistics among them.
  CHECK(report.at("categories").at("buffers").at("identical") == true);
  CHECK(report.at("categories").at("weights").at("identical") == true);
  // Same-seed runs agree bit for bit; different seeds (different initial weights, by
  // construction) give different final losses.
  const auto& stats = report.at("statistics");
  CHECK(stats.at("same").at("final_loss").at("std") == 0.0);
  CHECK(stats.at("different").at("final_loss").at("n") == 3);
  CHECK(stats.at("different").at("final_loss").at("std") > 0.0);
}

TEST_CASE("run: a fault in a residual block's batchnorm is found and named",
          "[cli][audit][resnet]") {
  TempDir dir;
  const std::string tensor = "stage1_block0.batchnorm_0.weight";
  const auto report = audit_of_tiny_resnet(
      dir, "--runs 2 --inject-fault run=1,step=1,tensor=" + tensor + ",element=1,bit=3", 1);
  CHECK(report.at("verdict").at("identical") == false);
  CHECK(report.dump().find(tensor) != std::string::npos);
}

TEST_CASE("run: a ResNet resumed from a checkpoint equals its uninterrupted run",
          "[cli][audit][resnet][resume]") {
  // The checkpoint carries the batchnorm layers' running statistics: without them the buffers of
  // the resumed run differ from the first step after the resume.
  TempDir dir;
  const auto report = audit_of_tiny_resnet(dir, "--runs 2 --interrupt-at 1", 0);
  CHECK(report.at("verdict").at("identical") == true);
  CHECK(report.at("categories").at("buffers").at("identical") == true);
}

TEST_CASE("run --vary augment varies the augmentation alone", "[cli][audit][resnet][augment]") {
  TempDir dir;
  auto spec =
      nlohmann::json::parse(ra::test::read_text(source_path("configs/resnet-tiny-synthetic.json")));
  spec["data"]["augment"] = {{"shift", 1}, {"flip", true}};
  const std::string spec_file = quoted(dir.write("augmented.json", spec.dump()));
  const auto out = dir.path() / "out";
  const auto r =
      run_cli("run " + spec_file + " --runs 2 --seeds both --vary augment --out " + quoted(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);  // the same-seed runs: bitwise identical
  const auto lines = [&](const char* run) {
    std::vector<nlohmann::json> records;
    std::istringstream text(ra::test::read_text(out / run));
    for (std::string line; std::getline(text, line);)
      records.push_back(nlohmann::json::parse(line));
    return records;
  };
  const auto same = lines("run-000.trace.jsonl"), varied = lines("run-002.trace.jsonl");
  // The different-seed run has an augmentation seed of its own, and only that.
  CHECK_FALSE(same[0]["seeds"].contains("augment"));
  CHECK(varied[0]["seeds"].contains("augment"));
  CHECK(varied[0]["seeds"]["init"] == same[0]["seeds"]["init"]);
  CHECK(varied[0]["seeds"]["data"] == same[0]["seeds"]["data"]);
  CHECK(varied[1]["weights"] == same[1]["weights"]);  // the same initial weights
  for (std::size_t s = 2; s < 5; ++s) {
    INFO("record " << s);
    CHECK(varied[s]["indices"] == same[s]["indices"]);  // the same samples, in the same order
    CHECK(varied[s]["inputs"] != same[s]["inputs"]);    // shifted and flipped otherwise
  }
}

TEST_CASE("run --epochs trains that many epochs and records the spec it ran",
          "[cli][audit][resnet][epochs]") {
  // The tiny ResNet: 48 samples in batches of 16, 3 steps an epoch; the spec says 1 epoch.
  TempDir dir;
  const auto report = audit_of_tiny_resnet(dir, "--runs 2 --seeds both --epochs 2", 0);
  for (const auto& run : report.at("runs")) CHECK(run.at("steps") == 6);
  CHECK(report.at("statistics").at("different").at("final_loss").at("n") == 2);
  // The manifest and every trace header hold the spec run (2 epochs) and its digest, so that
  // compare pairs these runs with each other and with no run of the file's 1-epoch spec.
  const auto out = dir.path() / "out";
  const auto manifest = nlohmann::json::parse(ra::test::read_text(out / "audit.json"));
  CHECK(manifest.at("spec").at("train").at("epochs") == 2);
  std::istringstream trace(ra::test::read_text(out / "run-000.trace.jsonl"));
  std::string header_line;
  std::getline(trace, header_line);
  const auto header = nlohmann::json::parse(header_line);
  CHECK(header.at("spec").at("train").at("epochs") == 2);
  CHECK(header.at("spec_digest") == manifest.at("spec_digest"));
  CHECK(run_cli("compare " + quoted(out)).exit_code == 0);
  // Resuming without --epochs asks for another audit: refused, naming the epochs.
  const auto resumed =
      run_cli("run " + tiny_resnet() + " --runs 2 --seeds both --resume --out " + quoted(out));
  CHECK(resumed.exit_code == 2);
  CHECK_THAT(resumed.err,
             Catch::Matchers::Contains("train.epochs (--epochs): 2 in the folder, 1 requested"));
  // train --epochs: the same override for one run.
  const auto trained = run_cli("train " + tiny_resnet() + " --epochs 2 --json");
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  const auto summary = nlohmann::json::parse(trained.out);
  CHECK(summary.at("steps") == 6);
  CHECK(summary.at("epochs").size() == 2);
}

TEST_CASE("run and train refuse --epochs 0, a sign and a fraction as usage (exit 2)",
          "[cli][audit][resnet][epochs]") {
  TempDir dir;
  for (const std::string value : {"0", "-1", "+2", "1.5", "100001"}) {
    for (const std::string command : {"run", "train"}) {
      INFO(command << " --epochs " << value);
      const auto r = run_cli(command + " " + tiny_resnet() + " --epochs " + value + " --out " +
                             quoted(dir.path() / "never"));
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Matchers::Contains("--epochs: expected"));
    }
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "never"));
  // A batch-invariance sweep trains no epochs.
  const auto sweep = run_cli("run " + tiny_resnet() + " --invariance --epochs 2");
  CHECK(sweep.exit_code == 2);
  CHECK_THAT(sweep.err, Catch::Matchers::Contains("--epochs does not apply to it"));
}

TEST_CASE("the next step printed after a divergence under --epochs is accepted and runs",
          "[cli][audit][resnet][epochs]") {
  TempDir dir;
  // A fault in the second epoch (steps 3..5): the next step must train as long to reach it.
  const auto report = audit_of_tiny_resnet(
      dir, "--runs 2 --epochs 2 --inject-fault run=1,step=4,tensor=dense_0.weight", 1);
  REQUIRE(report.at("next_step").is_object());
  const std::string command = report.at("next_step").at("command");
  CHECK_THAT(command, Catch::Matchers::Contains("--epochs 2"));
  const auto next = run_cli(command.substr(std::string("repro-audit ").size()));
  INFO(next.err);
  CHECK(next.exit_code == 1);  // accepted (not 2), and the runs still part at step 4
  CHECK_THAT(next.out, Catch::Matchers::Contains("root cause: outside the traced ops, step 4"));
}

TEST_CASE("run: Keras-style fractional shifts with nearest fill, identical across runs",
          "[cli][audit][resnet][augment]") {
  TempDir dir;
  auto spec =
      nlohmann::json::parse(ra::test::read_text(source_path("configs/resnet-tiny-synthetic.json")));
  spec["data"]["augment"] = {
      {"width_shift_range", 0.1}, {"height_shift_range", 0.1}, {"fill_mode", "nearest"}};
  const std::string spec_file = quoted(dir.write("keras_shifts.json", spec.dump()));
  const auto r =
      run_cli("run " + spec_file + " --runs 2 --out " + quoted(dir.path() / "out") + " --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).at("verdict").at("identical") == true);
  // The shifts changed what trained: the inputs differ from the unaugmented spec's.
  const auto plain = run_cli("train " + tiny_resnet() + " --json");
  const auto shifted = run_cli("train " + spec_file + " --json");
  REQUIRE((plain.exit_code == 0 && shifted.exit_code == 0));
  CHECK(nlohmann::json::parse(plain.out).at("weights_xxh3") !=
        nlohmann::json::parse(shifted.out).at("weights_xxh3"));
}
