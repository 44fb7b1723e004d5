// Algorithm files (rundir/algorithm_file.h): what --save-algorithms writes and --pin-algorithms
// reads, on any machine: a round trip, a trace read as its ledger, the GPU facts that differ, and
// every refusal of the format (a CPU run, a damaged file). What the pins are for a spec's runs:
// tests/audit/pinned_algorithms_test.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "rundir/algorithm_file.h"
#include "support/h100_fixture.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using ra::rundir::AlgorithmFile;

using ra::test::h100_here;
using ra::test::kH100Trace;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

std::size_t convolution_entries(const nlohmann::json& algorithms) {
  std::size_t n = 0;
  for (const nlohmann::json& e : algorithms) n += ra::rundir::is_convolution_entry(e) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("algorithm file: a run's ledger, written and read back", "[rundir][pins]") {
  const ra::trace::Trace run = ra::trace::read_trace(kH100Trace);
  const AlgorithmFile file = ra::rundir::algorithm_file_of(run.header);
  CHECK(file.gpu["gpu"] == "NVIDIA H100 80GB HBM3");
  CHECK(file.gpu["compute_capability"] == "9.0");
  CHECK(file.gpu["cudnn"] == "9.19.0");
  CHECK(file.gpu["cublas"] == "13.1.0");
  CHECK(file.made_from["run"] == 0);
  CHECK(file.made_from["spec"] == "keras12");
  CHECK(file.algorithms == run.header.ledger);

  ra::test::TempDir dir;
  ra::rundir::write_algorithm_file(dir.path / "algos.json", file);
  const AlgorithmFile back = ra::rundir::read_algorithm_file(dir.path / "algos.json");
  CHECK(back.gpu == file.gpu);
  CHECK(back.algorithms == file.algorithms);
  CHECK(back.made_from == file.made_from);

  // Only the convolutions are pinned: 5 of the ledger's 16 entries (2 forward, 2 filter
  // gradients, 1 data gradient: the first layer's input gradient is never computed).
  CHECK(back.algorithms.size() == 16);
  CHECK(convolution_entries(back.algorithms) == 5);
  CHECK_FALSE(ra::rundir::is_convolution_entry(
      {{"layer", "dense 128x9216->128"}, {"direction", "forward"}, {"algorithm", "x"}}));
  CHECK_FALSE(ra::rundir::is_convolution_entry(
      {{"layer", "conv 128x1x28x28 k32 3x3 s1 p0"}, {"direction", "fused"}, {"algorithm", "x"}}));
}

TEST_CASE("algorithm file: any trace is read as its ledger", "[rundir][pins]") {
  const AlgorithmFile from_trace = ra::rundir::read_algorithm_file(kH100Trace);
  CHECK(from_trace.algorithms == ra::trace::read_trace(kH100Trace).header.ledger);
  CHECK(from_trace.made_from["audit_id"] == ra::trace::read_trace(kH100Trace).header.audit_id);
}

TEST_CASE("algorithm file: the GPU facts that differ are named, the others not", "[rundir][pins]") {
  const AlgorithmFile file = ra::rundir::read_algorithm_file(kH100Trace);
  CHECK(ra::rundir::gpu_mismatches(file, h100_here()).empty());
  nlohmann::json here = h100_here();
  here["gpu"] = "NVIDIA H200";
  here["cudnn"] = "9.20.0";
  // The driver and the CUDA runtime do not decide cuDNN's algorithms.
  here["driver"] = "13.1";
  CHECK(ra::rundir::gpu_mismatches(file, here) ==
        std::vector<std::string>{"gpu: \"NVIDIA H100 80GB HBM3\" in the file, \"NVIDIA H200\" here",
                                 "cudnn: \"9.19.0\" in the file, \"9.20.0\" here"});
}

TEST_CASE("algorithm file: CPU runs and damaged files are refused", "[rundir][pins]") {
  ra::test::TempDir dir;
  // A CPU run: one algorithm per op and instruction set, nothing to pin or save.
  ra::trace::Trace cpu_run = ra::trace::read_trace(kH100Trace);
  cpu_run.header.backend = "cpu";
  cpu_run.header.ledger = nlohmann::json::array();
  CHECK_THAT(message_of([&] { ra::rundir::algorithm_file_of(cpu_run.header); }),
             Contains("one algorithm per op and instruction set"));

  const auto write = [&](const std::string& name, const std::string& text) {
    ra::write_file_atomic(dir.path / name, text);
    return message_of([&] { ra::rundir::read_algorithm_file(dir.path / name); });
  };
  CHECK_THAT(write("spec.json", R"({"name": "x"})"), Contains("not an algorithm file"));
  CHECK_THAT(write("v2.json", R"({"format": "repro-audit algorithms", "version": 2})"),
             Contains("algorithm file version 2, this tool reads version 1"));
  CHECK_THAT(write("bad.json", R"({"format": "repro-audit algorithms", "version": 1,
               "gpu": {}, "algorithms": [{"layer": "conv 1x1x3x3 k1 1x1 s1 p0"}]})"),
             Contains("algorithms[0].direction must be a string"));
  CHECK_THAT(write("empty.json", R"({"format": "repro-audit algorithms", "version": 1,
               "gpu": {}, "algorithms": []})"),
             Contains("names no convolution algorithm"));
  CHECK_THAT(write("broken.json", "{\"format\": "), Contains("broken.json:1:"));
  CHECK_THAT(message_of([&] { ra::rundir::read_algorithm_file(dir.path / "missing.json"); }),
             Contains("missing.json"));
}
