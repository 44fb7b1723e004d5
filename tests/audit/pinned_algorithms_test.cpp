// Pinned algorithms (audit/pinned_algorithms.h): what --pin-algorithms pins for a spec's runs on
// this machine, from an algorithm file or a trace (the format:
// tests/rundir/algorithm_file_test.cpp), and every refusal (another GPU or library version, a
// geometry of the model the file lacks, a CPU run, no usable GPU).
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <string>

#include "audit/pinned_algorithms.h"
#include "core/error.h"
#include "rundir/algorithm_file.h"
#include "spec/parse.h"
#include "support/h100_fixture.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using ra::rundir::AlgorithmFile;

using ra::test::h100_here;
using ra::test::kH100Trace;

// The fixture's spec (keras12: the Keras convnet, batch 128), from the trace header, on the GPU.
ra::spec::ExperimentSpec keras12_spec() {
  const ra::trace::Trace t = ra::trace::read_trace(kH100Trace);
  nlohmann::json doc = t.header.spec;
  doc["device"] = "cuda";
  return ra::spec::parse_spec(doc, "");
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

}  // namespace

TEST_CASE("pinned algorithms: a file pins its convolutions", "[audit][pins]") {
  ra::test::TempDir dir;
  ra::rundir::write_algorithm_file(
      dir.path / "algos.json",
      ra::rundir::algorithm_file_of(ra::trace::read_trace(kH100Trace).header));
  const AlgorithmFile back = ra::rundir::read_algorithm_file(dir.path / "algos.json");
  // Only the convolutions are pinned: 5 of the ledger's 16 entries (2 forward, 2 filter
  // gradients, 1 data gradient: the first layer's input gradient is never computed).
  const ra::backend::AlgorithmPins pins = ra::audit::pins_of(back, "algos.json");
  CHECK(pins.pins.size() == 5);
  CHECK(pins.complete);
  CHECK(pins.chosen_by == "pinned-file");
  const ra::backend::AlgorithmPin* filter =
      pins.find("conv 128x1x28x28 k32 3x3 s1 p0", "backward_filter");
  REQUIRE(filter != nullptr);
  CHECK(filter->algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0");
  CHECK(pins.find("conv 128x1x28x28 k32 3x3 s1 p0", "backward_data") == nullptr);
  CHECK(pins.find("dense 128x9216->128", "forward") == nullptr);
}

TEST_CASE("pinned algorithms: any trace pins its ledger", "[audit][pins]") {
  const ra::backend::AlgorithmPins pins =
      ra::audit::pins_for_run(kH100Trace, keras12_spec(), h100_here());
  CHECK(pins.pins.size() == 5);
  CHECK(pins.source == kH100Trace.string());
  // The model's convolutions at its batch size are all covered.
  CHECK(ra::audit::uncovered_convolutions(pins, keras12_spec()).empty());
}

TEST_CASE("pinned algorithms: another GPU or library version is refused, naming each difference",
          "[audit][pins]") {
  nlohmann::json here = h100_here();
  here["gpu"] = "NVIDIA H200";
  here["cudnn"] = "9.20.0";
  const std::string message =
      message_of([&] { ra::audit::pins_for_run(kH100Trace, keras12_spec(), here); });
  CHECK_THAT(message, Contains("made on another GPU or library version"));
  CHECK_THAT(message, Contains("gpu: \"NVIDIA H100 80GB HBM3\" in the file, \"NVIDIA H200\" here"));
  CHECK_THAT(message, Contains("cudnn: \"9.19.0\" in the file, \"9.20.0\" here"));
  CHECK_THAT(message, !Contains("cublas"));
  // The driver and the CUDA runtime do not decide cuDNN's algorithms: no refusal for them.
  here = h100_here();
  here["driver"] = "13.1";
  CHECK_NOTHROW(ra::audit::pins_for_run(kH100Trace, keras12_spec(), here));
}

TEST_CASE("pinned algorithms: a geometry the file lacks is named", "[audit][pins]") {
  ra::test::TempDir dir;
  AlgorithmFile file = ra::rundir::read_algorithm_file(kH100Trace);
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& e : file.algorithms) {
    if (!(e["layer"] == "conv 128x32x26x26 k64 3x3 s1 p0" && e["direction"] == "backward_data"))
      kept.push_back(e);
  }
  file.algorithms = kept;
  ra::rundir::write_algorithm_file(dir.path / "partial.json", file);
  const std::string message = message_of(
      [&] { ra::audit::pins_for_run(dir.path / "partial.json", keras12_spec(), h100_here()); });
  CHECK_THAT(message, Contains("pins no algorithm for 1 convolution(s) of keras12"));
  CHECK_THAT(message, Contains("conv 128x32x26x26 k64 3x3 s1 p0 backward_data"));
  // Another batch size is another geometry: every convolution is named.
  ra::spec::ExperimentSpec other = keras12_spec();
  other.data.batch_size = 64;
  const std::string batch =
      message_of([&] { ra::audit::pins_for_run(kH100Trace, other, h100_here()); });
  CHECK_THAT(batch, Contains("pins no algorithm for 5 convolution(s)"));
  CHECK_THAT(batch, Contains("conv 64x1x28x28 k32 3x3 s1 p0 forward"));
}

TEST_CASE("pinned algorithms: CPU runs and no usable GPU are refused", "[audit][pins]") {
  // A CPU run: one algorithm per op and instruction set, nothing to pin or save.
  ra::spec::ExperimentSpec cpu = keras12_spec();
  cpu.device = ra::spec::Device::cpu;
  CHECK_THAT(message_of([&] { ra::audit::pins_for_run(kH100Trace, cpu, h100_here()); }),
             Contains("the runs train on the CPU"));
  CHECK_THAT(message_of([&] { ra::audit::check_algorithms_can_be_saved(cpu, h100_here()); }),
             Contains("--save-algorithms: the runs train on the CPU"));
  // No usable GPU where the spec demands one: a runtime failure (exit 3), as the run would be.
  nlohmann::json none = {{"available", false}, {"reason", "no CUDA device"}};
  CHECK_THROWS_AS(ra::audit::pins_for_run(kH100Trace, keras12_spec(), none), ra::RuntimeFailure);
}
