// Deterministic autotune's pin-file flow (audit/deterministic_autotune.h) without a GPU: when an
// audit tunes, what run 0 is given (no pin, deterministic candidates timed), and what the other
// runs are pinned to once run 0 has run, from a real H100 run 0 trace standing in for the device
// (tests/audit/fixtures/h100-2026-11-26: its ledger names the algorithms it ran).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "audit/deterministic_autotune.h"
#include "audit/pinned_algorithms.h"
#include "rundir/algorithm_file.h"
#include "rundir/audit_folder.h"
#include "spec/parse.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"

namespace {

namespace fs = std::filesystem;
using ra::audit::AuditOptions;
using ra::spec::KernelMode;
using ra::test::TempDir;

// Run 0 of a deterministic audit of the Keras convnet on an H100 (batch 128).
const fs::path kRun0Trace = fs::path(REPRO_AUDIT_SOURCE_DIR) / "tests" / "audit" / "fixtures" /
                            "h100-2026-11-26" / "deterministic" / "run-000.trace.jsonl";

ra::spec::ExperimentSpec spec_in_mode(KernelMode mode) {
  nlohmann::json doc = ra::trace::read_trace(kRun0Trace).header.spec;
  doc["device"] = "cuda";
  doc["determinism"]["mode"] = ra::spec::to_string(mode);
  return ra::spec::parse_spec(doc, "");
}

}  // namespace

TEST_CASE("deterministic autotune: which audits tune in run 0", "[audit][deterministic_autotune]") {
  const ra::spec::ExperimentSpec deterministic = spec_in_mode(KernelMode::deterministic);
  const AuditOptions plain;
  CHECK(ra::audit::uses_deterministic_autotune(deterministic, plain, "cuda"));
  // Nothing to choose on the CPU.
  CHECK_FALSE(ra::audit::uses_deterministic_autotune(deterministic, plain, "cpu"));
  // Other modes: autotune chooses per run, nondeterministic keeps its atomic algorithms.
  CHECK_FALSE(
      ra::audit::uses_deterministic_autotune(spec_in_mode(KernelMode::autotune), plain, "cuda"));
  AuditOptions mode_override;
  mode_override.mode = KernelMode::nondeterministic;
  CHECK_FALSE(ra::audit::uses_deterministic_autotune(deterministic, mode_override, "cuda"));
  mode_override.mode = KernelMode::deterministic;
  CHECK(ra::audit::uses_deterministic_autotune(spec_in_mode(KernelMode::autotune), mode_override,
                                               "cuda"));
  // The user's pins win; shards cannot see run 0's choice before they start.
  AuditOptions pinned;
  pinned.algorithm_pins = std::make_shared<const ra::backend::AlgorithmPins>();
  CHECK_FALSE(ra::audit::uses_deterministic_autotune(deterministic, pinned, "cuda"));
  AuditOptions shard;
  shard.shard = ra::rundir::Shard{0, 2};
  CHECK_FALSE(ra::audit::uses_deterministic_autotune(deterministic, shard, "cuda"));
}

TEST_CASE("deterministic autotune: run 0 tunes, the others pin to the folder's file",
          "[audit][deterministic_autotune]") {
  // Run 0: no pin, nothing required, deterministic candidates timed.
  const auto tuning = ra::audit::tuning_pins();
  CHECK(tuning->pins.empty());
  CHECK_FALSE(tuning->complete);
  CHECK(tuning->tune_unpinned_deterministic);
  CHECK(tuning->chosen_by == "deterministic-autotune");

  // The device stood in for by a real run 0: its convolutions as a deterministic autotune would
  // have recorded them, but conv2d_0's filter gradient, which the spec ran nondeterministic
  // (chosen by its mode, "pinned").
  const TempDir dir;
  const fs::path run0 = dir.path / "run-000.trace.jsonl";
  {
    std::ifstream in(kRun0Trace);
    std::string first;
    std::getline(in, first);
    nlohmann::json header = nlohmann::json::parse(first);
    for (nlohmann::json& entry : header["ledger"]) {
      const bool conv = entry["algorithm"].get<std::string>().rfind("CUDNN_", 0) == 0;
      const bool untuned = entry["layer"] == "conv 128x1x28x28 k32 3x3 s1 p0" &&
                           entry["direction"] == "backward_filter";
      if (conv && !untuned) entry["chosen_by"] = "deterministic-autotune";
    }
    std::ofstream(run0) << header.dump() << "\n";
  }
  const auto pins = ra::audit::save_tuned_pins(run0, dir.path);
  REQUIRE(pins != nullptr);
  const fs::path file = dir.path / ra::rundir::kPinFileName;
  REQUIRE(fs::exists(file));
  CHECK(pins->source == file.string());
  CHECK_FALSE(pins->complete);  // what run 0 did not tune is chosen by its mode again
  CHECK_FALSE(pins->tune_unpinned_deterministic);
  CHECK(pins->chosen_by == "deterministic-autotune");
  // Both forward convolutions and conv2d_1's filter and data gradients (the first layer's input
  // needs none): not the untuned filter gradient; cuBLAS and the custom kernels never.
  REQUIRE(pins->pins.size() == 4);
  const ra::backend::AlgorithmPin* filter =
      pins->find("conv 128x32x26x26 k64 3x3 s1 p0", "backward_filter");
  REQUIRE(filter != nullptr);
  CHECK(filter->algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1");
  CHECK(pins->find("conv 128x1x28x28 k32 3x3 s1 p0", "backward_filter") == nullptr);
  CHECK(pins->find("dense 128x9216->128", "backward_weight") == nullptr);
  // The folder's file is an ordinary algorithm file of everything run 0 ran: `run
  // --pin-algorithms DIR/algorithms.json` repeats all of it.
  const ra::backend::AlgorithmPins reread =
      ra::audit::pins_of(ra::rundir::read_algorithm_file(file), file.string());
  CHECK(reread.pins.size() == 5);
  CHECK(reread.find("conv 128x32x26x26 k64 3x3 s1 p0", "backward_filter")->algorithm ==
        filter->algorithm);
}

TEST_CASE("deterministic autotune: a run 0 without a ledger leaves the others unpinned",
          "[audit][deterministic_autotune]") {
  // Run 0 failed before its trace was whole: no file, the other runs take the heuristic's choice.
  const TempDir dir;
  CHECK(ra::audit::save_tuned_pins(dir.path / "run-000.trace.jsonl", dir.path) == nullptr);
  CHECK_FALSE(fs::exists(dir.path / ra::rundir::kPinFileName));
}
