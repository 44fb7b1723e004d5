// End-to-end: `repro-audit bench --json` on the quick spec; the document is parsed, not scraped.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_runner.h"

using ra::test::run_cli;
using ra::test::source_path;

namespace {
// The spec path as one quoted shell word. (Appended, not `"'" + path + "'"`: GCC 12 warns a
// false -Wrestrict on that expression.)
std::string quoted_quick_spec() {
  std::string word = "'";
  word += source_path("configs/quick.json");
  word += "'";
  return word;
}
}  // namespace

TEST_CASE("bench --json reports step times, throughput and a per-op table", "[cli]") {
  const auto r =
      run_cli("bench " + quoted_quick_spec() + " --steps 3 --warmup 1 --threads 1 --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);  // stdout is pure JSON
  REQUIRE(doc.at("name") == "quick");
  REQUIRE(doc.at("steps") == 3);
  REQUIRE(doc.at("warmup") == 1);
  REQUIRE(doc.at("batch_size") == 32);
  // quick.json forward FLOPs per sample (docs/spec.md rule), input [1,16,16], valid padding:
  //   conv 8 k3 relu -> [8,14,14]: 2*8*1*9*196 = 28224 + bias 1568 + relu 1568 = 31360
  //   maxpool 2 -> [8,7,7]: 4*392 = 1568;  dropout: 392
  //   dense 392->32 relu: 2*392*32 = 25088 + 32 + 32 = 25152;  dense 32->10: 640 + 10 = 650
  //   total 59122; one step = 3 x forward x batch 32 (forward + backward).
  const double fwd = doc.at("forward_flops_per_sample").get<double>();
  REQUIRE(fwd == 59122.0);
  REQUIRE(doc.at("flops_per_step").get<double>() == Approx(3.0 * fwd * 32));

  const auto& results = doc.at("results");
  REQUIRE(results.size() == 1);
  const auto& t1 = results[0];
  REQUIRE(t1.at("threads") == 1);
  REQUIRE(t1.at("modes").size() == 2);
  std::set<std::string> modes;
  for (const auto& m : t1.at("modes")) {
    modes.insert(m.at("mode").get<std::string>());
    const double ms = m.at("median_step_ms").get<double>();
    REQUIRE(ms > 0.0);
    REQUIRE(m.at("step_ms").size() == 3);
    REQUIRE(m.at("untimed_ms_per_step").get<double>() >= 0.0);
    REQUIRE(m.at("samples_per_second").get<double>() == Approx(32.0 / (ms * 1e-3)));
    REQUIRE(m.at("gflops").get<double>() ==
            Approx(doc.at("flops_per_step").get<double>() / (ms * 1e-3) * 1e-9));
  }
  REQUIRE(modes == std::set<std::string>{"deterministic", "nondeterministic"});

  std::set<std::string> ops;
  for (const auto& op : t1.at("ops")) {
    ops.insert(op.at("op").get<std::string>());
    const double det = op.at("deterministic_ms_per_step").get<double>();
    const double nondet = op.at("nondeterministic_ms_per_step").get<double>();
    REQUIRE(det > 0.0);
    REQUIRE(nondet > 0.0);
    REQUIRE(op.at("ratio").get<double>() == Approx(det / nondet));
  }
  for (const char* op : {"conv2d_forward_maxpool", "conv2d_backward_maxpool", "dense_forward",
                         "dense_backward_weight", "softmax_cross_entropy"})
    REQUIRE(ops.count(op) == 1);
  // The table covers the 3 measured steps only, not the warmup step: quick.json has one conv
  // layer and two dense layers, each called once per step in each mode.
  for (const auto& op : t1.at("ops")) {
    const std::string name = op.at("op").get<std::string>();
    const int per_step = name == "conv2d_forward_maxpool" || name == "conv2d_backward_maxpool" ||
                                 name == "softmax_cross_entropy"
                             ? 1
                         : name == "dense_forward" ? 2
                                                   : 0;
    if (per_step == 0) continue;
    INFO(name);
    REQUIRE(op.at("deterministic_calls") == 3 * per_step);
    REQUIRE(op.at("nondeterministic_calls") == 3 * per_step);
  }
  REQUIRE(t1.at("step_ratio").get<double>() > 0.0);
}

TEST_CASE("bench --cuda-graphs on times whole steps, no op alone, and says how they launched",
          "[cli]") {
  const auto r = run_cli("bench " + quoted_quick_spec() +
                         " --steps 3 --warmup 1 --threads 1 --json --cuda-graphs on");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  const auto& t1 = doc.at("results").at(0);
  CHECK(t1.at("ops").empty());  // a replayed step makes no op's launch: nothing to time alone
  for (const auto& m : t1.at("modes")) {
    CHECK(m.at("median_step_ms").get<double>() > 0.0);
    CHECK(m.at("step_ms").size() == 3);
    CHECK_FALSE(m.contains("untimed_ms_per_step"));
    // On the CPU every step runs op by op, and says why: warmup and measured steps.
    CHECK(m.at("step_launch").at("eager") == 4);
    CHECK(m.at("step_launch").at("eager_reasons") ==
          nlohmann::json{{"the cpu backend runs each op as it is called", 4}});
  }
  const auto text = run_cli("bench " + quoted_quick_spec() +
                            " --steps 2 --warmup 0 --threads 1 --cuda-graphs on");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("steps launched: 0 captured, 0 replayed, 2 eager") != std::string::npos);
  CHECK(text.out.find("op (ms/step)") == std::string::npos);
}

TEST_CASE("bench --modes times the two modes named, in their order, the ratios first / second",
          "[cli]") {
  const auto r = run_cli("bench " + quoted_quick_spec() +
                         " --steps 2 --warmup 1 --threads 1 --json --modes "
                         "batch_invariant,deterministic");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  const auto& t1 = doc.at("results").at(0);
  REQUIRE(t1.at("modes").size() == 2);
  CHECK(t1.at("modes")[0].at("mode") == "batch_invariant");
  CHECK(t1.at("modes")[1].at("mode") == "deterministic");
  CHECK(t1.at("step_ratio").get<double>() ==
        Approx(t1.at("modes")[0].at("median_step_ms").get<double>() /
               t1.at("modes")[1].at("median_step_ms").get<double>()));
  for (const auto& op : t1.at("ops")) {
    INFO(op.dump());
    const double invariant = op.at("batch_invariant_ms_per_step").get<double>();
    const double deterministic = op.at("deterministic_ms_per_step").get<double>();
    CHECK(op.at("batch_invariant_calls") == op.at("deterministic_calls"));
    CHECK_FALSE(op.contains("nondeterministic_ms_per_step"));
    if (deterministic > 0) CHECK(op.at("ratio").get<double>() == Approx(invariant / deterministic));
  }
  for (const char* bad : {"batch_invariant", "deterministic,deterministic", "fast,deterministic"}) {
    INFO(bad);
    const auto refused = run_cli("bench " + quoted_quick_spec() + " --modes " + bad);
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("--modes: expected two different kernel modes") != std::string::npos);
  }
}

TEST_CASE("bench rejects a malformed thread list with exit code 2", "[cli]") {
  const auto r = run_cli("bench " + quoted_quick_spec() + " --threads 1,x");
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("--threads") != std::string::npos);
}

TEST_CASE("bench rejects more steps than a spec may train with exit code 2", "[cli]") {
  // 2^40 steps of quick.json's 16-step epochs need ~6.9e10 epochs; the spec limit is 100000.
  const auto r = run_cli("bench " + quoted_quick_spec() + " --steps 1099511627776 --threads 1");
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("epochs") != std::string::npos);
}

TEST_CASE("bench --device cuda times the GPU, or says there is none with exit code 3", "[cli]") {
  const auto r =
      run_cli("bench " + quoted_quick_spec() + " --device cuda --steps 2 --warmup 1 --json");
  INFO(r.err);
  if (r.exit_code == 3) {  // no usable GPU (every CI machine): a device failure, said so
    REQUIRE(r.out.empty());
    REQUIRE(r.err.find("bench --device cuda: no usable GPU: ") != std::string::npos);
    return;
  }
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.at("backend") == "cuda");
  REQUIRE(doc.at("gpu").at("available") == true);
  const auto& results = doc.at("results");
  REQUIRE(results.size() == 1);  // the GPU once, not per host thread count
  REQUIRE(results[0].at("modes").size() == 2);
  std::set<std::string> ops;
  for (const auto& op : results[0].at("ops")) {
    ops.insert(op.at("op").get<std::string>());
    REQUIRE(op.at("deterministic_ms_per_step").get<double>() > 0.0);
    REQUIRE(op.at("nondeterministic_ms_per_step").get<double>() > 0.0);
  }
  // The CUDA backend fuses no conv and pool: the table has the separate ops.
  for (const char* op : {"conv2d_forward", "conv2d_backward_filter", "conv2d_backward_bias",
                         "maxpool2d_backward", "dense_backward_weight", "softmax_cross_entropy"})
    REQUIRE(ops.count(op) == 1);
}

TEST_CASE("bench --device cuda refuses a thread list with exit code 2", "[cli]") {
  const auto r = run_cli("bench " + quoted_quick_spec() + " --device cuda --threads 1,2");
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.find("--threads") != std::string::npos);
}
