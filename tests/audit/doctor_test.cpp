// doctor's checks (compare/doctor_checks.h) on traces made in memory: each obstacle a failed
// finding named with its fix, on the CPU and on a GPU, a precision note an allowed one, and none
// for a run with nothing in the way.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/doctor_checks.h"
#include "trace/in_memory_traces.h"
#include "trace/pytorch_op_traces.h"

using Catch::Matchers::Contains;
using ra::compare::Finding;
using ra::trace::Trace;

namespace {

Trace clean_run() {
  return ra::test::quiet_pytorch_run();
}

std::vector<std::string> kinds(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.id);
  return out;
}

const std::string& what(const Finding& f) {
  return ra::compare::doctor_facts(f)->what;
}
const std::string& fix(const Finding& f) {
  return ra::compare::doctor_facts(f)->fix;
}

}  // namespace

TEST_CASE("doctor: a run with nothing in the way has no finding", "[audit][doctor]") {
  CHECK(ra::compare::doctor_findings(clean_run()).empty());
}

TEST_CASE("doctor: seeds not applied, or overridden after seed_everything", "[audit][doctor]") {
  Trace unseeded = clean_run();
  unseeded.header.seeded = nullptr;
  const auto none = ra::compare::doctor_findings(unseeded);
  REQUIRE(kinds(none) == std::vector<std::string>{"seeds"});
  CHECK_THAT(fix(none[0]), Contains("repro_audit.seed_everything(default=args.seed)"));
  // Issue 61: a run recorded in an mp.spawn worker, whose parent seeded itself alone.
  Trace worker = unseeded;
  worker.header.environment["spawned"] = true;
  const auto spawned = ra::compare::doctor_findings(worker);
  REQUIRE(kinds(spawned) == std::vector<std::string>{"seeds"});
  CHECK_THAT(what(spawned[0]), Contains("worker process") && Contains("does not reach it"));
  CHECK_THAT(fix(spawned[0]), Contains("at the start of the worker function"));
  Trace overridden = clean_run();
  overridden.header.seeded["torch_initial_seed"] = 1;
  const auto later = ra::compare::doctor_findings(overridden);
  REQUIRE(kinds(later) == std::vector<std::string>{"seeds"});
  CHECK_THAT(what(later[0]), Contains("torch.initial_seed() is 1, not 42"));
}

TEST_CASE("doctor: an op nondeterministic on CUDA, run on the CPU", "[audit][doctor]") {
  Trace t = clean_run();
  t.steps[1].ops_recorded = true;
  t.steps[1].ops.push_back({"aten.index_add_.default", "model.1", "", "", {}, {}});
  t.steps[1].ops.push_back({"aten.index_add_.default", "model.1", "", "", {}, {}});  // once
  const auto f = ra::compare::doctor_findings(t);
  REQUIRE(kinds(f) == std::vector<std::string>{"switch", "op"});
  CHECK_THAT(fix(f[0]), Contains("torch.use_deterministic_algorithms(True)"));
  CHECK_THAT(what(f[1]), Contains("aten.index_add_.default in model.1 (step 1) is "
                                  "nondeterministic on CUDA; identical on the CPU, where this run "
                                  "ran, but not on a GPU"));
  CHECK_THAT(fix(f[1]), Contains("gives it a deterministic kernel"));
  CHECK(ra::compare::cuda_nondeterministic_op("aten.upsample_bilinear2d_backward.grad_input"));
  CHECK_FALSE(ra::compare::cuda_nondeterministic_op("aten.addmm.default"));
  CHECK_FALSE(
      ra::compare::cuda_nondeterministic_op("aten.index_add"
                                            "_foo.default"));
}

TEST_CASE("doctor: on a GPU, the switches and the cuDNN engines", "[audit][doctor]") {
  Trace t = clean_run();
  t.header.backend = "pytorch-cuda";
  t.header.environment["cudnn_benchmark"] = true;
  t.header.ledger = {{{"layer", "model.conv1"},
                      {"direction", "backward_filter"},
                      {"algorithm", "engine 0"},
                      {"deterministic", false}},
                     {{"layer", "model.conv1"},
                      {"direction", "forward"},
                      {"algorithm", "engine 1"},
                      {"deterministic", true}}};
  const auto f = ra::compare::doctor_findings(t);
  CHECK(kinds(f) == std::vector<std::string>{"switch", "switch", "switch", "switch", "cudnn"});
  CHECK_THAT(fix(f[3]), Contains("CUBLAS_WORKSPACE_CONFIG=:4096:8"));
  CHECK_THAT(what(f[4]), Contains("engine 0, marked NONDETERMINISTIC, for model.conv1 "
                                  "(backward_filter)"));
  // Set as docs/pytorch.md says: nothing left.
  t.header.environment = {{"deterministic_algorithms", true},
                          {"cudnn_benchmark", false},
                          {"cudnn_deterministic", true},
                          {"cublas_workspace_config", ":4096:8"}};
  t.header.ledger.erase(0);
  CHECK(ra::compare::doctor_findings(t).empty());
  // TF32 allowed (cuDNN's default): a precision note, no obstacle to identical runs.
  t.header.environment["cudnn_allow_tf32"] = true;
  std::vector<Finding> findings = ra::compare::doctor_findings(t);
  REQUIRE(kinds(findings) == std::vector<std::string>{"precision"});
  CHECK(findings[0].outcome == ra::compare::CheckOutcome::allowed);
  CHECK_THAT(what(findings[0]), Contains("torch.backends.cudnn.allow_tf32"));
  CHECK_THAT(fix(findings[0]), Contains("allow_tf32 = False"));
  CHECK(ra::compare::findings_exit_code(findings) == 0);
  // An obstacle beside it fails the doctor.
  t.header.environment["cudnn_benchmark"] = true;
  findings = ra::compare::doctor_findings(t);
  REQUIRE(kinds(findings) == std::vector<std::string>{"switch", "precision"});
  CHECK(findings[0].outcome == ra::compare::CheckOutcome::failed);
  CHECK(ra::compare::findings_exit_code(findings) == 1);
}

TEST_CASE("doctor: loader workers sharing a stream", "[audit][doctor]") {
  Trace t = clean_run();
  t.final->loader_workers = {{7, 0, 2, {{"dataset.rng", {1, 1}}}},
                             {7, 1, 2, {{"dataset.rng", {1, 1}}}}};
  const auto f = ra::compare::doctor_findings(t);
  REQUIRE(kinds(f) == std::vector<std::string>{"loader"});
  CHECK_THAT(what(f[0]), Contains("random stream dataset.rng"));
  CHECK(f[0].outcome == ra::compare::CheckOutcome::failed);
  CHECK(f[0].data == nlohmann::json{{"kind", "loader"}, {"what", what(f[0])}, {"fix", fix(f[0])}});
}

TEST_CASE("doctor: every finding's id is its check's, its outcome failed or allowed",
          "[audit][doctor]") {
  Trace t = clean_run();
  t.header.seeded = nullptr;
  t.header.backend = "pytorch-cuda";
  t.header.environment["matmul_allow_tf32"] = true;
  t.header.ledger = {{{"layer", "c"}, {"direction", "forward"}, {"deterministic", false}}};
  t.steps[1].ops.push_back({"aten.cumsum.default", "", "", "", {}, {}});
  t.final->loader_workers = {{7, 0, 2, {{"s", {1, 1}}}}, {7, 1, 2, {{"s", {1, 1}}}}};
  const auto f = ra::compare::doctor_findings(t);
  CHECK(kinds(f) == std::vector<std::string>{"seeds", "switch", "switch", "switch", "precision",
                                             "loader", "op", "cudnn"});
  std::vector<std::string> ids;
  for (const ra::compare::DoctorCheck& c : ra::compare::doctor_checks()) ids.push_back(c.id);
  CHECK(ids == std::vector<std::string>{"seeds", "switch", "precision", "loader", "op", "cudnn"});
  for (const Finding& finding : f) {
    INFO(finding.id);
    CHECK(finding.data["kind"] == finding.id);
    CHECK(finding.summary == what(finding));
    CHECK(finding.outcome == (finding.id == "precision" ? ra::compare::CheckOutcome::allowed
                                                        : ra::compare::CheckOutcome::failed));
  }
}
