// End-to-end: `repro-audit train` and `validate` on real specs; outputs parsed, not scraped.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <regex>

#include "cli/cli_runner.h"

using ra::test::run_cli;
using ra::test::source_path;

namespace {
std::string final_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto pos = t.rfind('\n');
  return pos == std::string::npos ? t : t.substr(pos + 1);
}
}  // namespace

TEST_CASE("train prints a stable final line that is identical across runs", "[cli]") {
  const std::string spec = "'" + source_path("configs/quick.json") + "'";
  const auto a = run_cli("train " + spec);
  const auto b = run_cli("train " + spec + " --threads 1");
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  const std::string line = final_line(a.out);
  const std::regex format(
      R"(final loss=\S+ loss_bits=0x[0-9a-f]{8} eval_accuracy=[0-9.]+ steps=32 weights_xxh3=[0-9a-f]{32})");
  INFO(line);
  REQUIRE(std::regex_match(line, format));
  // Deterministic mode: the same bits with 2 threads (spec) and 1 thread (--threads 1).
  REQUIRE(line == final_line(b.out));
  // stdout has the epoch lines and the final line only; progress went to stderr.
  REQUIRE(a.out.find("epoch 1/2 ") == 0);
  REQUIRE(a.err.find("step") != std::string::npos);
}

TEST_CASE("train --json keeps stdout pure JSON and agrees with the final line", "[cli]") {
  const std::string spec = "'" + source_path("configs/quick.json") + "'";
  const auto text = run_cli("train " + spec);
  const auto js = run_cli("train " + spec + " --json");
  REQUIRE(js.exit_code == 0);
  const auto doc = nlohmann::json::parse(js.out);
  REQUIRE(doc.at("steps") == 32);
  REQUIRE(doc.at("epochs").size() == 2);
  const std::string bits = doc.at("final_loss_bits");
  REQUIRE(final_line(text.out).find("loss_bits=" + bits) != std::string::npos);
  REQUIRE(final_line(text.out).find(doc.at("weights_xxh3").get<std::string>()) !=
          std::string::npos);
}

TEST_CASE("train --seed changes the run, and --mode nondeterministic stays close", "[cli]") {
  const std::string spec = "'" + source_path("configs/quick.json") + "'";
  const auto base = nlohmann::json::parse(run_cli("train " + spec + " --json").out);
  const auto seeded = nlohmann::json::parse(run_cli("train " + spec + " --json --seed 43").out);
  REQUIRE(base.at("weights_xxh3") != seeded.at("weights_xxh3"));
  const auto nondet =
      nlohmann::json::parse(run_cli("train " + spec + " --json --mode nondeterministic").out);
  REQUIRE(nondet.at("mode") == "nondeterministic");
  // Same seeds, only the summation order of reductions may differ: values stay close.
  REQUIRE(nondet.at("final_loss").get<double>() ==
          Approx(base.at("final_loss").get<double>()).epsilon(1e-2));
}

TEST_CASE("validate prints the resolved model with totals", "[cli]") {
  const auto r =
      run_cli("validate --json '" + source_path("configs/keras-mnist-fashion.json") + "'");
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.at("params") == 1199882);
  REQUIRE(doc.at("layers").size() == 8);
  REQUIRE(doc.at("layers")[1].at("output") == nlohmann::json::array({64, 24, 24}));
  const auto text = run_cli("validate '" + source_path("configs/keras-mnist-fashion.json") + "'");
  REQUIRE(text.exit_code == 0);
  REQUIRE(text.out.find("1,199,882") != std::string::npos);
}

TEST_CASE("every shipped config validates", "[cli]") {
  for (const char* name :
       {"quick", "keras-mnist-fashion", "keras-cifar-constant", "single-conv-random"}) {
    const auto r = run_cli(std::string("validate '") + source_path("configs/") + name + ".json'");
    INFO(name << ": " << r.err);
    REQUIRE(r.exit_code == 0);
  }
}

TEST_CASE("train --cuda-graphs on: the CPU runs op by op, says why, with the same bits", "[cli]") {
  const std::string spec = "'" + source_path("configs/quick.json") + "'";
  const auto plain = run_cli("train " + spec + " --json");
  const auto graphs = run_cli("train " + spec + " --json --cuda-graphs on");
  INFO(graphs.err);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(graphs.exit_code == 0);
  const auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(graphs.out);
  CHECK_FALSE(a.contains("step_launch"));
  CHECK(b.at("weights_xxh3") == a.at("weights_xxh3"));
  const auto& launches = b.at("step_launch");
  CHECK(launches.at("eager") == 32);
  CHECK(launches.at("capture") == 0);
  CHECK(launches.at("replay") == 0);
  CHECK(launches.at("eager_reasons") ==
        nlohmann::json{{"the cpu backend runs each op as it is called", 32}});
  const auto bad = run_cli("train " + spec + " --cuda-graphs maybe");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--cuda-graphs") != std::string::npos);
}
