// A ResNet v2 audited end to end (configs/resnet-tiny-synthetic.json: the layout of Keras'
// ResNet29v2 at depth 11, a quarter of its filters, on 8x8 synthetic images): batch
// normalisation, residual blocks with identity and strided projection shortcuts, global average
// pooling, and the running statistics compared as a category of their own.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

using ra::test::quoted;
using ra::test::run_cli;
using ra::test::source_path;
using ra::test::TempDir;

namespace {

std::string tiny_resnet() {
  return ra::test::quoted(std::filesystem::path(source_path("configs/resnet-tiny-synthetic.json")));
}

}  // namespace

TEST_CASE("run: a ResNet v2 audit with both seed kinds reports identity and the seed spread",
          "[cli][audit][resnet]") {
  TempDir dir;
  const auto r = run_cli("run " + tiny_resnet() + " --runs 3 --seeds both --out " +
                         quoted(dir.path() / "out") + " --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
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
  const auto r =
      run_cli("run " + tiny_resnet() + " --runs 2 --out " + quoted(dir.path() / "out") +
              " --inject-fault run=1,step=1,tensor=" + tensor + ",element=1,bit=3 --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 1);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report.at("verdict").at("identical") == false);
  CHECK(report.dump().find(tensor) != std::string::npos);
}

TEST_CASE("run: a ResNet resumed from a checkpoint equals its uninterrupted run",
          "[cli][audit][resnet][resume]") {
  // The checkpoint carries the batchnorm layers' running statistics: without them the buffers of
  // the resumed run differ from the first step after the resume.
  TempDir dir;
  const auto r = run_cli("run " + tiny_resnet() + " --runs 2 --interrupt-at 1 --out " +
                         quoted(dir.path() / "out") + " --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report.at("verdict").at("identical") == true);
  CHECK(report.at("categories").at("buffers").at("identical") == true);
}
