// --trace-ops through the binary: the root cause in the text and JSON reports of run and compare,
// and the bad inputs around it (exit 2, named).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"

using ra::test::quoted;
using ra::test::run_cli;
using ra::test::TempDir;

namespace {

// 3 steps per epoch, 2 epochs, a conv, a max-pool and two dense layers.
std::string write_trace_ops_spec(const TempDir& dir) {
  const auto spec = nlohmann::json::parse(R"({
    "name": "cli-ops", "seed": 4, "threads": 2,
    "data": {"train": {"format": "random", "samples": 48, "shape": [1, 8, 8], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"},
      {"type": "dense", "units": 6, "activation": "relu"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 2}})");
  return quoted(dir.write("spec.json", spec.dump()));
}

}  // namespace

TEST_CASE("run --trace-ops names the root-cause op in text and JSON, compare agrees",
          "[cli][ops]") {
  TempDir dir;
  const auto out = dir.path() / "out";
  const auto r = run_cli(
      "run " + write_trace_ops_spec(dir) + " --runs 2 --trace-ops 0:4 --out " + quoted(out) +
      " --inject-fault run=1,step=2,op=dense_0/dense.backward_weight,element=2," +
      "bit=30 --json " + quoted(dir.path() / "report.json"));
  INFO(r.err);
  REQUIRE(r.exit_code == 1);  // deterministic: identity was expected
  CHECK(r.out.find("root cause: step 2 (epoch 0, batch 2), op ") != std::string::npos);
  CHECK(r.out.find("dense.backward_weight in dense_0 (deterministic, dense 16x27->6) [runs 1]") !=
        std::string::npos);
  CHECK(r.out.find("  inputs identical, output differs: dw\n") != std::string::npos);
  CHECK(r.out.find("  cause: injected fault (--inject-fault, a test facility) in this op's "
                   "output\n") != std::string::npos);
  CHECK(r.out.find("  then ") != std::string::npos);
  // bit 30 of a float is its exponent's top bit: 2^30 ULP, in one of the 6 x 27 elements of dw.
  CHECK(r.out.find("  magnitude, run 1: dw differs in 1 of 162 elements, by at most 1073741824 "
                   "ULP") != std::string::npos);
  CHECK(r.out.find("which ran 1 time on the recorded inputs: 1 distinct output") !=
        std::string::npos);

  const auto report = nlohmann::json::parse(ra::test::read_text(dir.path() / "report.json"));
  CHECK(report.at("op_window") == "0:4");
  REQUIRE(report.at("root_causes").size() == 1);
  const auto& cause = report.at("root_causes")[0];
  CHECK(cause.at("kind") == "op");
  CHECK(cause.at("step") == 2);
  CHECK(cause.at("op") == "dense.backward_weight");
  CHECK(cause.at("layer") == "dense_0");
  CHECK(cause.at("mode") == "deterministic");
  CHECK(cause.at("ledger_key") == "dense 16x27->6");
  CHECK(cause.at("differing_inputs") == nlohmann::json::array());
  CHECK(cause.at("differing_outputs") == nlohmann::json::array({"dw"}));
  CHECK(cause.at("runs") == nlohmann::json::array({1}));
  // The CPU names its kernel (one per op, instruction set and mode); the injected fault is the
  // cause, and is called so.
  CHECK(cause.at("algorithm").get<std::string>().rfind("cpu ", 0) == 0);
  CHECK(cause.at("algorithm_deterministic") == true);
  CHECK(cause.at("cause") == "fault");
  CHECK(cause.at("algorithms").size() == 1);
  const auto& magnitude = cause.at("magnitude");
  CHECK(magnitude.at("note").is_null());
  CHECK(magnitude.at("executions") == 1);
  REQUIRE(magnitude.at("runs").size() == 1);
  CHECK(magnitude.at("runs")[0].at("run") == 1);
  const auto& dw = magnitude.at("runs")[0].at("outputs")[0];
  CHECK(dw.at("output") == "dw");
  CHECK(dw.at("dtype") == "f32");
  CHECK(dw.at("elements") == 162);
  CHECK(dw.at("differing") == 1);
  CHECK(dw.at("max_ulp") == 1u << 30);

  // compare of the folder, from the files alone: the same cause, the same lines.
  const auto c = run_cli("compare " + quoted(out) + " --json -");
  REQUIRE(c.exit_code == 1);
  const auto again = nlohmann::json::parse(c.out);
  CHECK(again.at("root_causes") == report.at("root_causes"));

  // --no-magnitude: the cause without the replay.
  const auto quick = run_cli("compare " + quoted(out) + " --no-magnitude --json -");
  REQUIRE(quick.exit_code == 1);
  const auto unmeasured = nlohmann::json::parse(quick.out).at("root_causes")[0];
  CHECK(unmeasured.at("magnitude").is_null());
  CHECK(unmeasured.at("op") == "dense.backward_weight");
}

TEST_CASE("reports of audits without --trace-ops carry no root-cause fields", "[cli][ops]") {
  TempDir dir;
  const auto r = run_cli("run " + write_trace_ops_spec(dir) + " --runs 2 --out " +
                         quoted(dir.path() / "out") + " --json -");
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  CHECK_FALSE(report.contains("root_causes"));
  CHECK_FALSE(report.contains("op_window"));
}

TEST_CASE("bad --trace-ops windows and op faults exit 2, named", "[cli][ops]") {
  TempDir dir;
  const std::string spec = write_trace_ops_spec(dir);
  const auto out = quoted(dir.path() / "out");
  const auto bad_window = run_cli("run " + spec + " --trace-ops 5x --out " + out);
  CHECK(bad_window.exit_code == 2);
  CHECK(bad_window.err.find("--trace-ops: '5x' is not a step window") != std::string::npos);
  const auto empty = run_cli("run " + spec + " --trace-ops 4:2 --out " + out);
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find("holds no step") != std::string::npos);
  const auto no_window = run_cli("run " + spec + " --out " + out +
                                 " --inject-fault run=1,step=1,op=dense_0/dense.forward");
  CHECK(no_window.exit_code == 2);
  CHECK(no_window.err.find("needs --trace-ops with step 1 in its window") != std::string::npos);
  const auto outside = run_cli("run " + spec + " --trace-ops 2: --out " + out +
                               " --inject-fault run=1,step=1,op=dense_0/dense.forward");
  CHECK(outside.exit_code == 2);
  CHECK(outside.err.find("needs --trace-ops with step 1 in its window") != std::string::npos);
  const auto no_layer = run_cli("run " + spec + " --trace-ops all --out " + out +
                                " --inject-fault run=1,step=1,op=dense_9/dense.forward");
  CHECK(no_layer.exit_code == 2);
  CHECK(no_layer.err.find("the model has no layer 'dense_9'") != std::string::npos);
  const auto no_op = run_cli("run " + spec + " --trace-ops all --overwrite --out " + out +
                             " --inject-fault run=1,step=1,op=dense_0/conv2d.forward");
  CHECK(no_op.exit_code == 2);
  CHECK(no_op.err.find("op dense_0/conv2d.forward did not run at step 1") != std::string::npos);
}

TEST_CASE("a resumed audit keeps its op window and refuses another", "[cli][ops]") {
  TempDir dir;
  const std::string spec = write_trace_ops_spec(dir);
  const auto out = dir.path() / "out";
  REQUIRE(run_cli("run " + spec + " --runs 2 --trace-ops 0:3 --out " + quoted(out)).exit_code == 0);
  std::filesystem::remove(out / "run-001.trace.jsonl");
  const auto other =
      run_cli("run " + spec + " --runs 2 --trace-ops 1:3 --resume --out " + quoted(out));
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("--trace-ops window") != std::string::npos);
  const auto same =
      run_cli("run " + spec + " --runs 2 --trace-ops 0:3 --resume --out " + quoted(out));
  INFO(same.err);
  CHECK(same.exit_code == 0);
  CHECK(same.out.find("BITWISE IDENTICAL") != std::string::npos);
}

TEST_CASE("trace-ops: a step N alone is the window N:N+1", "[cli][ops]") {
  TempDir dir;
  const auto out = dir.path() / "out";
  const auto r =
      run_cli("run " + write_trace_ops_spec(dir) + " --runs 2 --trace-ops 2 --out " + quoted(out) +
              " --inject-fault run=1,step=2,op=dense_0/dense.backward_weight,element=2," +
              "bit=30 --no-magnitude --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 1);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report.at("op_window") == "2:3");
  CHECK(report.at("root_causes").at(0).at("step") == 2);
  CHECK(nlohmann::json::parse(ra::test::read_text(out / "audit.json")).at("trace_ops") == "2:3");
}
