// The phases of compare_traces (compare/compare_phases.h), each on traces built in memory
// (in_memory_traces.h): which runs agree, where they first part, by how much and how it grows.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/compare_phases.h"
#include "compare/finding_facts.h"
#include "compare/ledger_entries.h"
#include "core/error.h"
#include "trace/in_memory_traces.h"

namespace {

using namespace ra::compare;
using namespace ra::trace;
using ra::test::runs_of;
using ra::test::TraceBuilder;

// Six steps in three epochs; run 2's gradient of dense_1.weight differs from step 2 on.
std::vector<Trace> diverging_at_step_2() {
  TraceBuilder b;
  b.steps = 6;
  b.eval_accuracy = {0.75, 0.8125, 0.875};
  std::vector<Trace> traces = runs_of(b, 3);
  ra::test::diverge(traces[2], 2, 2);
  traces[2].epochs[2].eval_accuracy = 0.84375;
  return traces;
}

std::string message_of(const std::vector<Trace>& traces) {
  try {
    phases::check_comparable(traces);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("check_comparable refuses what cannot be compared, naming the traces",
          "[audit][compare]") {
  REQUIRE(message_of({}) == "no traces to compare");
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 2);
  REQUIRE(message_of(traces).empty());
  traces[1].header.spec_digest = "ffffffffffffffffffffffffffffffff";
  REQUIRE(message_of(traces) ==
          "traces come from different specs: run-000.trace.jsonl has spec digest "
          "0123456789abcdef0123456789abcdef, run-001.trace.jsonl has "
          "ffffffffffffffffffffffffffffffff");
  traces = runs_of(TraceBuilder{}, 2);
  traces[1].header.params[1].shape = ra::Shape{3};
  REQUIRE(message_of(traces) ==
          "traces have different parameter lists: run-000.trace.jsonl and run-001.trace.jsonl");
  traces = runs_of(TraceBuilder{}, 2);
  traces[0].final.reset();
  REQUIRE(message_of(traces) == "run-000.trace.jsonl: the run did not finish (no end record)");
}

TEST_CASE("summarize_runs: outcome classes, mode and per-run figures", "[audit][compare]") {
  const std::vector<Trace> traces = diverging_at_step_2();
  const phases::RunSummaries s = phases::summarize_runs(traces);
  REQUIRE(s.classes == std::vector<std::vector<int>>{{0, 1}, {2}});
  REQUIRE(s.mode_summary == "deterministic");
  REQUIRE(s.runs.size() == 3);
  CHECK(s.runs[1].outcome_class == 0);
  CHECK(s.runs[2].outcome_class == 1);
  CHECK(s.runs[0].final_loss == 1.875f);
  CHECK(s.runs[0].steps == 6);
  CHECK(s.runs[0].eval_accuracy == 0.875);
  CHECK(s.runs[2].final_loss_bits == ra::test::float_bits(1.875f) + 9);
  CHECK(s.runs[0].recording_fraction == Approx(0.0001 / (0.002 * 6)));
  CHECK(s.runs[1].source == "run-001.trace.jsonl");
  // Timings are not part of the outcome.
  std::vector<Trace> timed = runs_of(TraceBuilder{}, 2);
  timed[1].steps[0].seconds = 9;
  CHECK(phases::summarize_runs(timed).classes == std::vector<std::vector<int>>{{0, 1}});
  // Runs under different policies: "mixed".
  TraceBuilder nondeterministic;
  nondeterministic.mode = "nondeterministic";
  timed.push_back(nondeterministic.build(2));
  CHECK(phases::summarize_runs(timed).mode_summary == "mixed");
  CHECK(phases::all_fully_deterministic(runs_of(TraceBuilder{}, 2)));
  CHECK_FALSE(phases::all_fully_deterministic(timed));
  // batch_invariant runs every reduction on its deterministic path: identity is expected.
  TraceBuilder invariant;
  invariant.mode = "batch_invariant";
  CHECK(phases::all_fully_deterministic(runs_of(invariant, 2)));
}

TEST_CASE("same_seed_runs: the runs expected to agree and their common steps", "[audit][compare]") {
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 2);
  TraceBuilder different;
  different.seed_group = "different";
  different.seed = 7;
  traces.push_back(different.build(2));
  traces.push_back(TraceBuilder{}.build(3));
  traces[3].steps.pop_back();
  const phases::ComparedRuns compared = phases::same_seed_runs(traces);
  REQUIRE(compared.ids == std::vector<int>{0, 1, 3});
  REQUIRE(compared.traces[2] == &traces[3]);
  REQUIRE(compared.common_steps == 3);
  const phases::RunSummaries s = phases::summarize_runs(traces);
  CHECK(phases::all_in_one_class(compared, s.runs) == false);  // run 3 lost a step
  traces[3] = TraceBuilder{}.build(3);
  CHECK(phases::all_in_one_class(phases::same_seed_runs(traces),
                                 phases::summarize_runs(traces).runs));
}

TEST_CASE("category_verdicts: first divergence per category and steps differing",
          "[audit][compare]") {
  const std::vector<Trace> traces = diverging_at_step_2();
  const auto verdicts = phases::category_verdicts(phases::same_seed_runs(traces));
  REQUIRE(verdicts.size() == 6);
  CHECK(verdicts[0].identical);  // initial weights
  CHECK(verdicts[1].identical);  // batches
  const CategoryVerdict& losses = verdicts[2];
  REQUIRE_FALSE(losses.identical);
  CHECK(*losses.first->step == 3);
  CHECK(losses.first->tensor == "loss");
  CHECK(losses.steps_differing == 3);
  const CategoryVerdict& gradients = verdicts[3];
  CHECK(*gradients.first->step == 2);
  CHECK(gradients.first->epoch == 1);
  CHECK(gradients.first->batch == 0);
  CHECK(gradients.first->tensor == "dense_1.weight");
  CHECK(gradients.first->runs_differing == std::vector<int>{2});
  CHECK(gradients.steps_differing == 4);
  CHECK(verdicts[4].first->tensor == "dense_1.weight");
  CHECK(verdicts[5].first->tensor == "optimizer_state");
  // Gradients, weights and optimizer state part at step 2: the earliest in causal order wins.
  const auto first = phases::first_divergence(verdicts);
  REQUIRE(first);
  CHECK(first->category == Category::gradients);
  CHECK(*first->step == 2);
}

TEST_CASE("category_verdicts: initial weights part before step 0", "[audit][compare]") {
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 3);
  traces[1].initial_weights[1].low ^= 1;
  traces[2].steps[0].batch_labels.low ^= 1;
  const auto verdicts = phases::category_verdicts(phases::same_seed_runs(traces));
  CHECK_FALSE(verdicts[0].first->step.has_value());
  CHECK(verdicts[0].first->tensor == "conv2d_0.bias");
  CHECK(verdicts[0].first->runs_differing == std::vector<int>{1});
  CHECK(verdicts[0].steps_differing == 1);
  CHECK(verdicts[1].first->tensor == "labels");
  CHECK(phases::first_divergence(verdicts)->category == Category::initial_weights);
  // One compared run: nothing to compare against.
  traces.resize(1);
  for (const auto& v : phases::category_verdicts(phases::same_seed_runs(traces)))
    CHECK(v.identical);
}

TEST_CASE("loss_differences: first and final difference in ulp, tolerance", "[audit][compare]") {
  const std::vector<Trace> traces = diverging_at_step_2();
  const phases::ComparedRuns compared = phases::same_seed_runs(traces);
  const LossDifferences d = phases::loss_differences(compared, 1e-4);
  REQUIRE(d.first);
  CHECK(d.first->step == 3);
  CHECK(d.first->run == 2);
  CHECK(d.first->reference == 2.125f);
  CHECK(d.first->ulp == 3);
  REQUIRE(d.final);
  CHECK(d.final->ulp == 9);
  CHECK(d.final->other == std::bit_cast<float>(ra::test::float_bits(1.875f) + 9));
  CHECK(d.within_tolerance);
  CHECK_FALSE(phases::loss_differences(compared, 1e-8).within_tolerance);
  const std::vector<Trace> same = runs_of(TraceBuilder{}, 2);
  const LossDifferences none = phases::loss_differences(phases::same_seed_runs(same), 0);
  CHECK_FALSE(none.first);
  CHECK_FALSE(none.final);
  CHECK(none.within_tolerance);
}

TEST_CASE("epoch_growth: drift per epoch from the traces", "[audit][compare]") {
  const std::vector<Trace> traces = diverging_at_step_2();
  const auto growth = phases::epoch_growth(phases::same_seed_runs(traces), {});
  REQUIRE(growth.size() == 3);
  CHECK(growth[0].max_loss_ulp == 0);
  CHECK(growth[0].weights_differing == 0);
  CHECK(*growth[0].max_abs_eval_accuracy_difference == 0.0);
  CHECK(growth[1].max_loss_ulp == 3);  // step 3
  CHECK(growth[1].weights_differing == 3);
  CHECK(growth[2].max_loss_ulp == 9);  // step 5; the largest absolute difference is step 4's
  CHECK(growth[2].max_abs_loss_difference ==
        Approx(std::bit_cast<float>(ra::test::float_bits(2.0f) + 6) - 2.0));
  CHECK(*growth[2].max_abs_eval_accuracy_difference == 0.03125);
  CHECK_FALSE(growth[2].snapshot);
}

TEST_CASE("snapshot_divergences: initial, at the first divergence, final", "[audit][compare]") {
  const std::vector<Trace> traces = diverging_at_step_2();
  ComparisonOptions options;
  std::vector<std::string> asked;
  options.load_snapshot = [&](int run, const std::string& point,
                              std::vector<std::pair<std::string, ra::Tensor>>& out) {
    asked.push_back(point + "/" + std::to_string(run));
    out = {{"w", ra::Tensor(ra::Shape{4}, 1.0f)}};
    if (run == 2 && point != "initial") out[0].second.data()[1] = 1.5f;
    return true;
  };
  const phases::ComparedRuns compared = phases::same_seed_runs(traces);
  const auto snaps = phases::snapshot_divergences(
      options, compared, phases::first_divergence(phases::category_verdicts(compared)));
  REQUIRE(snaps.size() == 3);
  CHECK(snaps[0].point == "initial");
  CHECK(snaps[0].total.differing == 0);
  CHECK(snaps[1].point == "step-2");
  CHECK(*snaps[1].step == 2);
  CHECK(snaps[1].total.differing == 1);
  CHECK(snaps[1].total.max_abs == 0.5);
  CHECK(snaps[2].point == "final");
  CHECK(*snaps[2].step == 5);
  CHECK(asked.front() == "initial/0");
  // Growth takes the epoch snapshots.
  const auto growth = phases::epoch_growth(compared, options);
  CHECK(growth[1].snapshot->max_abs == 0.5);
  // Tensors that do not match the reference's are bad input.
  options.load_snapshot = [](int run, const std::string&,
                             std::vector<std::pair<std::string, ra::Tensor>>& out) {
    out = {{run == 0 ? "w" : "v", ra::Tensor(ra::Shape{4}, 1.0f)}};
    return true;
  };
  CHECK_THROWS_WITH(phases::snapshot_divergence(options, {0, 1}, "final", 3),
                    "snapshot final of run 1: tensor v does not match run 0");
}

TEST_CASE("seed_group_statistics: per group, and std ratios with both", "[audit][compare]") {
  std::vector<RunSummary> runs(5);
  const float losses[] = {1.0f, 1.0f, 0.5f, 1.5f, 1.0f};
  for (int i = 0; i < 5; ++i) {
    runs[i].run = i;
    runs[i].seed_group = i < 2 ? "same" : "different";
    runs[i].final_loss = losses[i];
    runs[i].median_step_seconds = 0.001 * (i + 1);
  }
  runs[0].seed_group = "";  // counts as "same"
  const ra::compare::SeedGroupStatistics s = phases::seed_group_statistics(runs);
  REQUIRE(s.groups.size() == 2);
  CHECK(s.groups[0].group == "different");
  CHECK(s.groups[0].final_loss.n == 3);
  CHECK(s.groups[0].final_loss.mean == 1.0);
  CHECK(s.groups[0].final_loss.std == 0.5);
  CHECK(s.groups[0].median_step_ms.min == Approx(3.0));
  CHECK(s.groups[1].group == "same");
  CHECK(s.groups[1].final_loss.std == 0.0);
  CHECK(s.groups[1].eval_accuracy.n == 0);
  REQUIRE(s.loss_std_ratio);
  CHECK(s.loss_std_ratio->ratio == 0.0);
  CHECK_FALSE(s.accuracy_std_ratio);  // no run evaluated
  runs.resize(2);
  CHECK_FALSE(phases::seed_group_statistics(runs).loss_std_ratio);
}

TEST_CASE("environment_differences: keys against run 0", "[audit][compare]") {
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 3);
  CHECK(phases::environment_differences(traces).empty());
  traces[2].header.environment["hostname"] = "host-c";
  traces[2].header.environment.erase("compiler");
  CHECK(phases::environment_differences(traces) ==
        std::vector<std::string>{"compiler: \"g++ 12.2.0\" (run 0) vs null (run 2)",
                                 "hostname: \"host-a\" (run 0) vs \"host-c\" (run 2)"});
  // The host alone computes nothing differently: no key that can change bits.
  CHECK(phases::numeric_environment_differences(traces[0].header, traces[2].header) ==
        std::vector<std::string>{"compiler"});
  // A key null in one fingerprint and absent from the other says the same: no difference.
  traces[1].header.environment["cuda"] = nullptr;
  CHECK(phases::numeric_environment_differences(traces[0].header, traces[1].header).empty());
}

namespace {

std::vector<const nlohmann::json*> ledgers_of(const std::vector<Trace>& traces) {
  std::vector<const nlohmann::json*> out;
  for (const Trace& t : traces) out.push_back(&t.header.ledger);
  return out;
}

}  // namespace

TEST_CASE("ledger_differences: run groups per geometry and direction", "[audit][compare]") {
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 4);
  const std::string conv = "conv 2x1x8x8 k3 3x3 s1 p0";
  for (Trace& t : traces) {
    t.header.ledger = nlohmann::json::array(
        {autotuned(conv, "forward", "CUDNN_CONVOLUTION_FWD_ALGO_GEMM", 0.25),
         autotuned(conv, "backward_data", "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING", 0.5)});
  }
  CHECK(phases::ledger_differences(ledgers_of(traces)).empty());
  // A time measured anew in every run is no difference between the runs' algorithms.
  traces[1].header.ledger[0]["autotune"]["time_ms"] = 0.75;
  CHECK(phases::ledger_differences(ledgers_of(traces)).empty());
  traces[1].header.ledger[1]["algorithm"] = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT";
  traces[3].header.ledger[1]["algorithm"] = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0";
  traces[3].header.ledger[1]["deterministic"] = false;
  const std::vector<LedgerDifference> d = phases::ledger_differences(ledgers_of(traces));
  REQUIRE(d.size() == 1);
  CHECK(d[0].layer == conv);
  CHECK(d[0].direction == "backward_data");
  REQUIRE(d[0].groups.size() == 3);
  CHECK(d[0].groups[0].runs == std::vector<int>{0, 2});
  CHECK(d[0].groups[0].algorithm == "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING");
  CHECK(d[0].groups[0].autotune_ms == std::vector<double>{0.5, 0.5});
  CHECK(d[0].groups[1].runs == std::vector<int>{1});
  CHECK(d[0].groups[2].runs == std::vector<int>{3});
  CHECK(d[0].groups[2].deterministic == false);
  CHECK(d[0].groups[2].chosen_by == "autotuned");
  // A run whose ledger lacks the entry is a group of its own, with no algorithm.
  traces[2].header.ledger.erase(0);
  const std::vector<LedgerDifference> missing = phases::ledger_differences(ledgers_of(traces));
  REQUIRE(missing.size() == 2);
  CHECK(missing[0].direction == "forward");
  REQUIRE(missing[0].groups.size() == 2);
  CHECK(missing[0].groups[1].runs == std::vector<int>{2});
  CHECK(missing[0].groups[1].algorithm.empty());
}

TEST_CASE("a divergent run made on another machine says what differs, next to the divergence",
          "[audit][compare][shard]") {
  // Run 1 agrees with run 0 on another host (no explanation needed); run 2 diverges on a machine
  // with another CPU and GEMM kernel, as a shard on another node would.
  std::vector<Trace> traces = diverging_at_step_2();
  traces[1].header.environment["hostname"] = "host-b";
  traces[2].header.environment["hostname"] = "host-c";
  traces[2].header.environment["cpu_model"] = "Other CPU";
  traces[2].header.environment["cpu_gemm_kernel"] = "avx2-fma";
  const ComparisonResult r = compare_traces(traces, {});
  REQUIRE(r.divergent_machines.size() == 1);
  CHECK(r.divergent_machines[0].run == 2);
  CHECK(r.divergent_machines[0].environment ==
        std::vector<std::string>{"cpu_gemm_kernel", "cpu_model", "hostname"});
  CHECK_FALSE(r.divergent_machines[0].ledger);
  const nlohmann::json j = to_json(r);
  CHECK(j["divergent_machines"][0]["run"] == 2);
  CHECK(j["divergent_machines"][0]["environment"].size() == 3);

  // A divergent run on the reference's machine and build has nothing to say.
  traces = diverging_at_step_2();
  CHECK(compare_traces(traces, {}).divergent_machines.empty());
  // Another algorithm ledger on the same machine and build (autotune choosing otherwise in one
  // process) is no other machine: the ledger differences say it, not this line.
  traces[2].header.ledger =
      nlohmann::json::array({autotuned("conv 2x1x8x8 k3 3x3 s1 p0", "forward", "FFT", 0.1)});
  const ComparisonResult ledger = compare_traces(traces, {});
  CHECK(ledger.divergent_machines.empty());
  CHECK(ra::compare::environment_of(ledger).ledger.size() == 1);
  // With another machine too, the line says the ledger differs as well.
  traces[2].header.environment["cpu_model"] = "Other CPU";
  const ComparisonResult both = compare_traces(traces, {});
  REQUIRE(both.divergent_machines.size() == 1);
  CHECK(both.divergent_machines[0].ledger);
}

TEST_CASE("pinned algorithms that are not deterministic are named in a warning",
          "[audit][compare][pins]") {
  std::vector<Trace> traces = runs_of(TraceBuilder{}, 2);
  nlohmann::json atomic = autotuned("conv 2x1x8x8 k3 3x3 s1 p0", "backward_filter",
                                    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0", 0.1, false);
  atomic.erase("autotune");
  atomic["chosen_by"] = "pinned-file";
  for (Trace& t : traces) t.header.ledger = nlohmann::json::array({atomic});
  const ComparisonResult r = compare_traces(traces, {});
  REQUIRE(ra::compare::warnings_of(r).size() == 1);
  CHECK(ra::compare::warnings_of(r)[0].find(
            "1 pinned algorithm(s) are not deterministic: conv 2x1x8x8 k3 3x3 s1 "
            "p0 backward_filter CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0") == 0);
  // Deterministic pins, or an atomic algorithm the mode chose: no such warning.
  for (Trace& t : traces) t.header.ledger[0]["chosen_by"] = "pinned";
  CHECK(ra::compare::warnings_of(compare_traces(traces, {})).empty());
}

TEST_CASE("default_expectation: the command's own default for trace files named alone",
          "[audit][compare]") {
  // exec's runs (PyTorch traces) are expected identical whatever the script's switches, as exec
  // and `compare DIR` of its folder expect them (issue 61: compare of the files exited 0).
  TraceBuilder pytorch;
  pytorch.mode = "nondeterministic";  // no torch.use_deterministic_algorithms
  std::vector<Trace> traces = runs_of(pytorch, 2);
  for (Trace& t : traces) t.header.backend = "pytorch-cpu";
  CHECK(phases::default_expectation(traces));
  ra::test::diverge(traces[1], 1, 0);
  CHECK(compare_traces(traces, {}).diverged());
  // The engine's: identity only when every reducing op ran deterministic.
  TraceBuilder engine;
  engine.mode = "nondeterministic";
  CHECK_FALSE(phases::default_expectation(runs_of(engine, 2)));
  CHECK(phases::default_expectation(runs_of(TraceBuilder{}, 2)));
}

TEST_CASE("empty_first_epoch_warning: epochs counted from 1 are said, not a silent row",
          "[audit][compare]") {
  TraceBuilder b;
  b.steps = 4;
  std::vector<Trace> traces = runs_of(b, 2);
  // The recorder's trace of `for epoch in range(1, 3)`: an empty epoch 0, then epochs 1 and 2.
  for (Trace& t : traces) {
    for (StepRecord& s : t.steps) s.epoch += 1;
    for (EpochRecord& e : t.epochs) e.epoch += 1;
    t.epochs.insert(t.epochs.begin(), EpochRecord{0, 0, 0.0, std::nullopt, std::nullopt, 0.0});
  }
  const std::optional<std::string> w = phases::empty_first_epoch_warning(traces);
  REQUIRE(w);
  CHECK_THAT(*w, Catch::Contains("runs 0, 1: epoch 0 has no step, the first steps are of epoch 1"));
  ra::test::diverge(traces[1], 1, 0);
  const ComparisonResult r = compare_traces(traces, {});
  CHECK(std::find(ra::compare::warnings_of(r).begin(), ra::compare::warnings_of(r).end(), *w) !=
        ra::compare::warnings_of(r).end());
  REQUIRE_FALSE(r.growth.epochs.empty());
  CHECK(r.growth.epochs.front().epoch == 1);  // no row for the empty epoch
  CHECK_FALSE(phases::empty_first_epoch_warning(runs_of(b, 2)));
}
