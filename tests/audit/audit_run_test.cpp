// Audits end to end in-process: verdicts, localisation of injected faults, seed variation.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "core/digest.h"
#include "core/error.h"
#include "formats/safetensors.h"
#include "record/fault_check.h"
#include "rundir/folder_traces.h"
#include "spec/parse.h"
#include "support/temp_dir.h"
#include "support/tiny_tmpfs.h"
#include "trace/trace_io.h"

namespace {

using ra::test::TempDir;

ra::spec::ExperimentSpec small_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "audit-test", "seed": 5, "threads": 2,
    "data": {"train": {"format": "random", "samples": 96, "shape": [2, 8, 8], "classes": 4},
             "eval": {"format": "random", "samples": 32, "shape": [2, 8, 8], "classes": 4, "seed": 3},
             "batch_size": 16},
    "model": {"input": [2, 8, 8], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2},
      {"type": "dropout", "rate": 0.25},
      {"type": "flatten"},
      {"type": "dense", "units": 4}]},
    "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
    "train": {"epochs": 2}})"),
                              ".");
}

ra::audit::AuditOptions options_in(const TempDir& dir, int runs) {
  ra::audit::AuditOptions o;
  o.runs = runs;
  o.out_dir = dir.path;
  return o;
}

const ra::compare::CategoryVerdict& category(const ra::compare::ComparisonResult& r,
                                             ra::compare::Category c) {
  for (const auto& v : r.categories) {
    if (v.category == c) return v;
  }
  throw std::logic_error("missing category");
}

}  // namespace

TEST_CASE("a deterministic audit is one class with every category identical", "[audit]") {
  TempDir dir;
  const auto result = ra::audit::run_audit(small_spec(), options_in(dir, 3));
  const auto& r = result.comparison;
  REQUIRE(r.identity.classes.size() == 1);
  REQUIRE(r.identity.classes[0] == std::vector<int>{0, 1, 2});
  REQUIRE(r.identity.identical);
  REQUIRE(r.identity.expect_identical);
  REQUIRE_FALSE(r.diverged());
  REQUIRE_FALSE(r.first_divergence);
  for (const auto& v : r.categories) REQUIRE(v.identical);
  REQUIRE(result.trace_files.size() == 3);
  for (const auto& f : result.trace_files) REQUIRE(std::filesystem::exists(f));
  // Initial and final snapshots are always written.
  REQUIRE(std::filesystem::exists(dir.path / "run-000" / "weights-initial.safetensors"));
  REQUIRE(std::filesystem::exists(dir.path / "run-002" / "weights-final.safetensors"));
  REQUIRE(r.runs[0].steps == 12);
}

TEST_CASE("every snapshot, written when taken or behind the run, holds the weights of its step",
          "[audit]") {
  // Behind the run, a writer thread writes host copies taken at each step (record/
  // run_observers.h): a copy taken late, or shared with the next step's update, would hold
  // another step's weights.
  for (const bool behind : {false, true}) {
    INFO((behind ? "written behind the run" : "written when taken"));
    TempDir dir;
    auto o = options_in(dir, 1);
    o.snapshots.every_steps = 1;
    o.snapshots.write_behind = behind;
    const auto result = ra::audit::run_audit(small_spec(), o);
    const ra::trace::Trace trace = ra::trace::read_trace(result.trace_files.at(0));
    REQUIRE(trace.steps.size() == 12);
    const auto weights_in = [&](const std::string& point) {
      const auto file = ra::formats::read_safetensors(dir.path / "run-000" /
                                                      ("weights-" + point + ".safetensors"));
      REQUIRE(file.metadata.at("point") == point);
      std::vector<ra::Digest128> digests;
      for (const auto& param : trace.header.params) {
        const ra::Tensor* t = file.find(param.name);
        REQUIRE(t != nullptr);
        digests.push_back(ra::digest(*t));
      }
      return digests;
    };
    CHECK(weights_in("initial") == trace.initial_weights);
    for (const auto& step : trace.steps) {
      INFO("step " << step.step);
      CHECK(weights_in("step-" + std::to_string(step.step)) == step.weights);
    }
    REQUIRE(trace.final);
    CHECK(weights_in("final") == trace.final->weights);
  }
}

TEST_CASE("a disk that fills at a snapshot ends the audit with the write's error", "[audit]") {
  // 256 KiB of weights a snapshot (a dense layer of 1024 x 64): the folder, the trace and three
  // snapshots fit in 1 MiB, the fourth does not. Written when taken (the CPU backend's way) or
  // behind the run (a device backend's), the failure reaches the audit alike.
  const auto spec = ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "full-disk", "seed": 4, "threads": 1,
    "data": {"train": {"format": "random", "samples": 32, "shape": [1, 32, 32], "classes": 64},
             "batch_size": 4},
    "model": {"input": [1, 32, 32], "layers": [{"type": "flatten"}, {"type": "dense", "units": 64}]},
    "optimizer": {"type": "sgd", "lr": 0.01},
    "train": {"epochs": 1}})"),
                                         ".");
  for (const bool behind : {false, true}) {
    INFO((behind ? "written behind the run" : "written when taken"));
    TempDir dir;
    ra::test::TinyTmpfs disk(dir.path / "small", "1m");
    if (!disk.mounted) {
      WARN("skipped: mounting a small tmpfs needs root");
      return;
    }
    const auto& small = disk.path;
    ra::audit::AuditOptions o;
    o.runs = 1;
    o.out_dir = small / "out";
    o.snapshots.every_steps = 1;
    o.snapshots.write_behind = behind;
    std::string message;
    try {
      static_cast<void>(ra::audit::run_audit(spec, o));
    } catch (const ra::RuntimeFailure& e) {  // a full disk: the machine's failure (exit 3)
      message = e.what();
    }
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(small / "out" / "run-000")) {
      names.push_back(e.path().filename().string());
    }
    const bool whole_trace = std::filesystem::exists(small / "out" / "run-000.trace.jsonl");
    INFO(message);
    CHECK(message.find("disk full") != std::string::npos);
    CHECK(message.find(".safetensors") != std::string::npos);
    CHECK_FALSE(whole_trace);
    CHECK(names.size() >= 2);  // the snapshots written before the disk filled stay
    for (const auto& n : names) {
      INFO(n);
      CHECK(n.find(".tmp") == std::string::npos);  // the failed write removed its temporary
    }
  }
}

TEST_CASE("a flipped weight bit is localised to its run, step and tensor", "[audit]") {
  TempDir dir;
  auto o = options_in(dir, 3);
  o.fault = ra::record::parse_fault("run=1,step=4,tensor=dense_0.weight,element=7,bit=0");
  o.snapshots.every_steps = 1;
  const auto r = ra::audit::run_audit(small_spec(), o).comparison;
  REQUIRE(r.diverged());
  REQUIRE(r.identity.classes.size() == 2);
  REQUIRE(r.identity.classes[0] == std::vector<int>{0, 2});
  REQUIRE(r.identity.classes[1] == std::vector<int>{1});
  REQUIRE(r.first_divergence);
  REQUIRE(r.first_divergence->category == ra::compare::Category::weights);
  REQUIRE(*r.first_divergence->step == 4);
  REQUIRE(r.first_divergence->tensor == "dense_0.weight");
  REQUIRE(r.first_divergence->runs_differing == std::vector<int>{1});
  // Nothing before the fault differs.
  REQUIRE(category(r, ra::compare::Category::initial_weights).identical);
  REQUIRE(category(r, ra::compare::Category::batches).identical);
  // The losses can only part later, once the flipped weight is used by a forward pass.
  if (r.losses.first) REQUIRE(r.losses.first->step >= 5);
  // The step-4 snapshot shows exactly one element, one ulp apart.
  bool found = false;
  for (const auto& s : r.snapshots) {
    if (s.point != "step-4") continue;
    found = true;
    REQUIRE(s.total.differing == 1);
    REQUIRE(s.total.max_ulp == 1);
    for (const auto& t : s.tensors)
      REQUIRE((t.difference.differing == 1) == (t.tensor == "dense_0.weight"));
  }
  REQUIRE(found);
}

TEST_CASE("a perturbed batch order is caught in batches", "[audit]") {
  TempDir dir;
  auto o = options_in(dir, 3);
  o.fault = ra::record::parse_fault("run=2,step=3,tensor=batch");
  const auto r = ra::audit::run_audit(small_spec(), o).comparison;
  REQUIRE(r.diverged());
  REQUIRE(r.first_divergence->category == ra::compare::Category::batches);
  REQUIRE(*r.first_divergence->step == 3);
  REQUIRE(r.first_divergence->tensor == "indices");
  REQUIRE(r.first_divergence->runs_differing == std::vector<int>{2});
}

TEST_CASE("varying the data stream changes batches, not initial weights, and init the reverse",
          "[audit]") {
  TempDir dir;
  auto o = options_in(dir, 2);
  o.seeds = ra::audit::SeedPolicy::both;
  o.vary = {.init = false, .data = true, .dropout = false};
  const auto data_runs = ra::audit::run_audit(small_spec(), o);
  std::vector<ra::trace::Trace> traces;
  for (const auto& f : data_runs.trace_files) traces.push_back(ra::trace::read_trace(f));
  REQUIRE(traces.size() == 4);
  REQUIRE(traces[2].header.seed_group == "different");
  REQUIRE(traces[2].initial_weights == traces[0].initial_weights);
  REQUIRE(traces[3].initial_weights == traces[0].initial_weights);
  REQUIRE(traces[2].steps[0].batch_indices != traces[0].steps[0].batch_indices);
  REQUIRE(traces[2].steps[0].batch_indices != traces[3].steps[0].batch_indices);
  REQUIRE(traces[2].header.seed_init == traces[0].header.seed_init);
  REQUIRE(traces[2].header.seed_data != traces[0].header.seed_data);
  // The same-seed pair still agrees, so the audit does not diverge.
  REQUIRE_FALSE(data_runs.comparison.diverged());

  TempDir dir2;
  auto o2 = options_in(dir2, 2);
  o2.seeds = ra::audit::SeedPolicy::different;
  o2.vary = {.init = true, .data = false, .dropout = false};
  const auto init_runs = ra::audit::run_audit(small_spec(), o2);
  const auto a = ra::trace::read_trace(init_runs.trace_files[0]);
  const auto b = ra::trace::read_trace(init_runs.trace_files[1]);
  REQUIRE(a.initial_weights != b.initial_weights);
  for (std::size_t s = 0; s < a.steps.size(); ++s) {
    REQUIRE(a.steps[s].batch_indices == b.steps[s].batch_indices);
    REQUIRE(a.steps[s].batch_inputs == b.steps[s].batch_inputs);
  }
}

TEST_CASE("a nondeterministic audit reports what its traces say", "[audit]") {
  TempDir dir;
  auto o = options_in(dir, 3);
  o.mode = ra::spec::KernelMode::nondeterministic;
  const auto result = ra::audit::run_audit(small_spec(), o);
  const auto& r = result.comparison;
  REQUIRE_FALSE(r.identity.expect_identical);
  REQUIRE_FALSE(r.diverged());
  REQUIRE(r.subject.mode_summary == "nondeterministic");
  // Classes must match the traces, whether or not nondeterminism happened in this run.
  std::vector<ra::trace::Trace> traces;
  for (const auto& f : result.trace_files) traces.push_back(ra::trace::read_trace(f));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const bool same_class = r.runs[i].outcome_class == r.runs[j].outcome_class;
      bool same_record = traces[i].initial_weights == traces[j].initial_weights &&
                         traces[i].final->weights == traces[j].final->weights;
      for (std::size_t s = 0; s < traces[i].steps.size(); ++s) {
        same_record = same_record && traces[i].steps[s].loss_bits == traces[j].steps[s].loss_bits &&
                      traces[i].steps[s].grads == traces[j].steps[s].grads &&
                      traces[i].steps[s].weights == traces[j].steps[s].weights;
      }
      REQUIRE(same_class == same_record);
    }
  }
  REQUIRE(r.identity.identical == (r.identity.classes.size() == 1));
  REQUIRE(r.losses.within_tolerance);
}

TEST_CASE("compare of trace files gives the in-process verdict", "[audit]") {
  TempDir dir;
  auto o = options_in(dir, 3);
  o.fault = ra::record::parse_fault("run=0,step=2,tensor=conv2d_0.bias,element=1,bit=3");
  const auto in_process = ra::audit::run_audit(small_spec(), o);
  ra::audit::AuditComparisonOptions co;
  const auto from_files = ra::audit::compare_trace_files(ra::rundir::trace_files_in(dir.path), co);
  // Files given by name: the same report, without the folder's check.
  auto strip_sources = [](nlohmann::json j) {
    for (auto& run : j["runs"]) run.erase("source");
    j.erase("audit_folders");
    return j;
  };
  REQUIRE(strip_sources(ra::compare::to_json(from_files)) ==
          strip_sources(ra::compare::to_json(in_process.comparison)));
  // The folder, through its manifest: the very report of the audit.
  REQUIRE(ra::compare::to_json(ra::audit::compare_inputs({dir.path}, co)) ==
          ra::compare::to_json(in_process.comparison));
}

TEST_CASE("a nondeterministic policy with every reducing op overridden expects identity",
          "[audit]") {
  // Identity is expected when every reducing op ran deterministic (docs/report.md), whatever
  // the policy's default mode says.
  TempDir dir;
  auto spec = small_spec();
  spec.determinism.mode = ra::spec::KernelMode::nondeterministic;
  for (int i = 0; i < ra::spec::kReducingOpCount; ++i) {
    spec.determinism.ops[static_cast<ra::spec::ReducingOp>(i)] =
        ra::spec::KernelMode::deterministic;
  }
  const auto result = ra::audit::run_audit(spec, options_in(dir, 2));
  REQUIRE(result.comparison.identity.expect_identical);
  REQUIRE(result.comparison.identity.identical);
  // One op left nondeterministic: identity is no longer expected.
  TempDir dir2;
  spec.determinism.ops.erase(ra::spec::ReducingOp::conv2d_backward_filter);
  REQUIRE_FALSE(
      ra::audit::run_audit(spec, options_in(dir2, 2)).comparison.identity.expect_identical);
}
