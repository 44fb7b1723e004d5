// Golden tests of `repro-audit doctor`'s text and JSON (report/doctor_section.h, docs/doctor.md),
// byte for byte against tests/report/golden/doctor_*: a run with nothing in the way, several
// kinds of obstacle on the CPU, a seed overridden, the spawned worker that does not seed (issue
// 61), a GPU's switches and cuDNN engines, loader workers, TF32 allowed beside obstacles and
// alone. Written (in tests/audit, against lib/audit's forms) before the doctor's findings became
// registered checks with a section of their own (issue 60), so that the move is seen to change no
// byte where the forms were right (REPRO_AUDIT_UPDATE_GOLDEN=1 rewrites them: docs/report.md).
#include <catch2/catch.hpp>

#include <string>

#include "compare/doctor_checks.h"
#include "report/doctor_section.h"
#include "support/golden.h"
#include "trace/in_memory_traces.h"
#include "trace/pytorch_op_traces.h"

namespace {

using ra::trace::Trace;

// A PyTorch run on the CPU with nothing in the way (tests/trace/pytorch_op_traces.h), step 1
// recorded too.
Trace quiet_run() {
  Trace t = ra::test::quiet_pytorch_run();
  t.steps[1].ops_recorded = true;
  return t;
}

// The same run on a GPU, its switches set as docs/pytorch.md says and its engines deterministic.
Trace quiet_gpu_run() {
  Trace t = quiet_run();
  t.header.backend = "pytorch-cuda";
  t.header.environment = {{"gpu", "NVIDIA H100 80GB HBM3"},
                          {"deterministic_algorithms", true},
                          {"cudnn_benchmark", false},
                          {"cudnn_deterministic", true},
                          {"cublas_workspace_config", ":4096:8"}};
  t.header.ledger = {{{"layer", "model.conv1"},
                      {"direction", "forward"},
                      {"algorithm", "engine 1"},
                      {"deterministic", true}}};
  return t;
}

// The report as run_doctor makes it of the run's trace.
ra::compare::DoctorReport report_of(const Trace& t, const std::string& name) {
  return ra::compare::doctor_report(t, name,
                                    "repro-audit-out/" + name + "-doctor/run-000.trace.jsonl");
}

void check_doctor_forms(const std::string& golden, const Trace& t,
                        const std::string& name = "train") {
  const ra::compare::DoctorReport r = report_of(t, name);
  ra::test::check_golden(golden + ".txt", ra::report::doctor_text(r));
  ra::test::check_golden(golden + ".json", ra::report::doctor_json(r).dump(2) + "\n");
}

}  // namespace

TEST_CASE("doctor golden: nothing in the way", "[report][doctor][golden]") {
  check_doctor_forms("doctor_clear", quiet_run());
  check_doctor_forms("doctor_clear_gpu", quiet_gpu_run());
}

TEST_CASE("doctor golden: seeds, switch, loader and ops on the CPU", "[report][doctor][golden]") {
  Trace t = quiet_run();
  t.header.seeded = nullptr;
  t.steps[1].ops.push_back({"aten.index_add_.default", "model.1", "", "", {}, {}});
  t.steps[1].ops.push_back({"aten.upsample_bilinear2d_backward.grad_input", "", "", "", {}, {}});
  t.steps[1].ops.push_back({"aten.index_put_.default", "model.2", "", "", {}, {}});
  t.final->loader_workers = {{7, 0, 2, {{"dataset.rng", {1, 1}}, {"numpy", {5, 0}}}},
                             {7, 1, 2, {{"dataset.rng", {1, 1}}, {"numpy", {5, 0}}}}};
  // A name and a folder with a control character: both escaped in the text, kept in the JSON.
  check_doctor_forms("doctor_cpu_obstacles", t,
                     "tr\x1b"
                     "ain");
}

TEST_CASE("doctor golden: a seed overridden, a spawned worker unseeded",
          "[report][doctor][golden]") {
  Trace reseeded = quiet_run();
  reseeded.header.seeded["torch_initial_seed"] = 1;
  check_doctor_forms("doctor_reseeded", reseeded);
  Trace worker = quiet_run();
  worker.header.seeded = nullptr;
  worker.header.environment["spawned"] = true;
  check_doctor_forms("doctor_spawned_worker", worker, "main");
}

TEST_CASE("doctor golden: a GPU's switches, cuDNN engines and an op", "[report][doctor][golden]") {
  Trace t = quiet_gpu_run();
  t.header.environment = {{"gpu", "NVIDIA H100 80GB HBM3"},
                          {"deterministic_algorithms", false},
                          {"cudnn_benchmark", true},
                          {"cudnn_deterministic", false},
                          {"cublas_workspace_config", nullptr}};
  t.header.ledger.push_back({{"layer", "model.conv1"},
                             {"direction", "backward_filter"},
                             {"algorithm", "engine 0"},
                             {"deterministic", false}});
  t.header.ledger.push_back(
      {{"layer", "model.conv2"}, {"direction", "backward_data"}, {"deterministic", false}});
  t.steps[1].ops.push_back({"aten.scatter_add_.default", "model.head", "", "", {}, {}});
  check_doctor_forms("doctor_gpu_obstacles", t);
}

TEST_CASE("doctor golden: TF32 allowed beside obstacles, and alone", "[report][doctor][golden]") {
  Trace t = quiet_gpu_run();
  t.header.environment["matmul_allow_tf32"] = true;
  t.header.environment["cudnn_allow_tf32"] = true;
  check_doctor_forms("doctor_precision_only", t);
  t.header.environment["cudnn_benchmark"] = true;
  t.header.ledger.push_back({{"layer", "model.conv1"},
                             {"direction", "backward_filter"},
                             {"algorithm", "engine 0"},
                             {"deterministic", false}});
  check_doctor_forms("doctor_precision_and_obstacles", t);
}
