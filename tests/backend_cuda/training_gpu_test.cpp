// Training on the GPU against the CPU reference, end to end ([gpu]: each case skips with the
// reason where no GPU is usable, as on every machine of this project's CI, or where the
// Fashion-MNIST training files are not in $RA_FASHION_MNIST_DIR, default the folder of Debian's
// dataset-fashion-mnist package; scripts/gpu-verify points it at the copy scripts/gpu-bundle
// carries to a lent GPU machine, which has no Debian packages):
// - the same initial weights and the same batches, bit for bit (digests from the traces);
// - deterministic GPU audits of the Keras MNIST convnet are bitwise identical over 5 runs;
// - the loss trajectory of a GPU run follows the CPU run within a stated tolerance.
#include <catch2/catch.hpp>

#include "backend_cuda/gpu_test_support.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "audit/audit.h"
#include "backend/cuda/device.h"
#include "spec/parse.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"

namespace {

using ra::test::TempDir;

// The folder of the Fashion-MNIST IDX files.
std::filesystem::path fashion_mnist_dir() {
  const char* dir = std::getenv("RA_FASHION_MNIST_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/usr/share/datasets/fashion-mnist";
}

const char* const kTrainImages = "train-images-idx3-ubyte.gz";
const char* const kTrainLabels = "train-labels-idx1-ubyte.gz";

// The first training file that is missing, or "" when both are there.
std::string missing_fashion_mnist() {
  for (const char* name : {kTrainImages, kTrainLabels}) {
    const std::filesystem::path file = fashion_mnist_dir() / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) return file.string();
  }
  return "";
}

// Like RA_SKIP_WITHOUT_USABLE_GPU: a machine without the data cannot run the case, which is not a
// failure of the code under test.
#define RA_SKIP_WITHOUT_FASHION_MNIST()                                                       \
  do {                                                                                        \
    const std::string missing_ = missing_fashion_mnist();                                     \
    if (!missing_.empty()) {                                                                  \
      WARN("skipped: " << missing_ << " not found (set RA_FASHION_MNIST_DIR to its folder)"); \
      return;                                                                                 \
    }                                                                                         \
  } while (false)

// The Keras MNIST convnet on a Fashion-MNIST subset, 40 steps.
ra::spec::ExperimentSpec keras_mnist(const std::string& device, int max_steps) {
  auto doc = nlohmann::json::parse(std::string(R"({"name": "keras-mnist-gpu", "device": ")") +
                                   device + R"(", "seed": 1337, "threads": 2,
    "data": {"scale": 0.00392156862745098, "batch_size": 128},
    "model": {"input": [1, 28, 28], "layers": [
      {"type": "conv2d", "filters": 32, "kernel": 3, "activation": "relu"},
      {"type": "conv2d", "filters": 64, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "dropout", "rate": 0.25}, {"type": "flatten"},
      {"type": "dense", "units": 128, "activation": "relu"}, {"type": "dropout", "rate": 0.5},
      {"type": "dense", "units": 10}]},
    "optimizer": {"type": "adadelta", "lr": 1.0, "rho": 0.95, "eps": 1e-7},
    "train": {"epochs": 1}})");
  const std::filesystem::path dir = fashion_mnist_dir();
  doc["data"]["train"] = {{"format", "idx"},
                          {"images", (dir / kTrainImages).string()},
                          {"labels", (dir / kTrainLabels).string()},
                          {"limit", 128 * max_steps}};
  return ra::spec::parse_spec(doc, ".");
}

ra::audit::AuditResult audit(const ra::spec::ExperimentSpec& spec, int runs, const TempDir& dir,
                             ra::spec::KernelMode mode) {
  ra::audit::AuditOptions o;
  o.runs = runs;
  o.mode = mode;
  o.out_dir = dir.path;
  return ra::audit::run_audit(spec, o);
}

}  // namespace

TEST_CASE("GPU and CPU start from the same weights and see the same batches", "[gpu]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  RA_SKIP_WITHOUT_FASHION_MNIST();
  TempDir gpu_dir, cpu_dir;
  const auto gpu = audit(keras_mnist("cuda", 5), 1, gpu_dir, ra::spec::KernelMode::deterministic);
  const auto cpu = audit(keras_mnist("cpu", 5), 1, cpu_dir, ra::spec::KernelMode::deterministic);
  const auto g = ra::trace::read_trace(gpu.trace_files[0]);
  const auto c = ra::trace::read_trace(cpu.trace_files[0]);
  REQUIRE(g.header.backend == "cuda");
  REQUIRE(c.header.backend == "cpu");
  REQUIRE(g.initial_weights == c.initial_weights);
  // The loop below indexes both traces by the CPU's steps: the same count, and some.
  REQUIRE(g.steps.size() == c.steps.size());
  REQUIRE_FALSE(c.steps.empty());
  for (std::size_t s = 0; s < c.steps.size(); ++s) {
    REQUIRE(g.steps[s].batch_indices == c.steps[s].batch_indices);
    REQUIRE(g.steps[s].batch_inputs == c.steps[s].batch_inputs);
    REQUIRE(g.steps[s].batch_labels == c.steps[s].batch_labels);
  }
  // The ledger says what ran on the GPU.
  REQUIRE_FALSE(g.header.ledger.empty());
}

TEST_CASE("deterministic GPU audits of the Keras MNIST convnet are bitwise identical", "[gpu]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  RA_SKIP_WITHOUT_FASHION_MNIST();
  TempDir dir;
  const auto r = audit(keras_mnist("cuda", 40), 5, dir, ra::spec::KernelMode::deterministic);
  REQUIRE(r.comparison.identity.identical);
  REQUIRE(r.comparison.identity.classes.size() == 1);
  // Every convolution ran the heuristic's choice (backend/cuda/conv_heuristic.h): deterministic,
  // fp32 FMA, and the same algorithms in every run.
  const auto first = ra::trace::read_trace(r.trace_files[0]);
  int convolutions = 0;
  for (const nlohmann::json& e : first.header.ledger) {
    if (e.value("layer", "").rfind("conv ", 0) != 0 || e.value("direction", "") == "backward_bias")
      continue;
    INFO(e.dump());
    ++convolutions;
    CHECK(e.value("chosen_by", "") == "heuristic");
    CHECK(e.value("deterministic", false));
    CHECK(e.value("math_type", "") == "CUDNN_FMA_MATH");
  }
  CHECK(convolutions == 5);  // 2 forward, 2 filter gradients, 1 data gradient (conv2d_1)
  for (const auto& file : r.trace_files) {
    CHECK(ra::trace::read_trace(file).header.ledger == first.header.ledger);
  }
}

// How far a GPU run may part from the CPU run. Different summation orders (cuDNN/cuBLAS against
// the CPU's blocked GEMM) start as ~1e-7 relative differences that training amplifies
// chaotically: between CPU runs that differ only in reduction order (nondeterministic mode,
// 4 runs of this spec, 26 November 2026) the per-step losses parted by at most 1.1e-4 relative
// up to step 6, then 2.7% at step 16, 7.5% at 22 and 48% at 28. The first H200 run parted from
// the CPU run by 3.0% at step 18 and failed the earlier per-step 2% bound, which float noise
// alone exceeds. So: the first steps tightly, where noise is still small and a wrong gradient is
// not (H200, deterministic: at most 5.1e-5 up to step 5), and later training by its mean loss
// (steps 20..39: 0.4% to 1.7% between CPU runs, 1.4% to 2.6% between H200 runs of the three
// kernel modes and the CPU run; docs/history/gpu-results.md).
constexpr std::size_t kTightSteps = 6;    // steps 0 .. 5
constexpr float kTightTolerance = 1e-3f;  // ~20x what the H200 showed
constexpr std::size_t kMeanFrom = 20;     // the mean of steps 20 .. 39
constexpr double kMeanTolerance = 0.06;   // ~2x the largest difference seen

TEST_CASE("a GPU run's loss trajectory follows the CPU run's", "[gpu]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  RA_SKIP_WITHOUT_FASHION_MNIST();
  TempDir gpu_dir, cpu_dir;
  const auto g = ra::trace::read_trace(
      audit(keras_mnist("cuda", 40), 1, gpu_dir, ra::spec::KernelMode::deterministic)
          .trace_files[0]);
  const auto c = ra::trace::read_trace(
      audit(keras_mnist("cpu", 40), 1, cpu_dir, ra::spec::KernelMode::deterministic)
          .trace_files[0]);
  REQUIRE(g.steps.size() == c.steps.size());
  REQUIRE(c.steps.size() > kMeanFrom);
  const auto loss = [](const auto& trace, std::size_t s) {
    return std::bit_cast<float>(trace.steps[s].loss_bits);
  };
  // The first step: same weights, same batch, one forward pass.
  REQUIRE(std::abs(loss(g, 0) - loss(c, 0)) <= 1e-4f * std::abs(loss(c, 0)));
  for (std::size_t s = 0; s < kTightSteps; ++s) {
    INFO("step " << s << ": gpu " << loss(g, s) << " cpu " << loss(c, s));
    REQUIRE(std::abs(loss(g, s) - loss(c, s)) <= kTightTolerance * std::abs(loss(c, s)));
  }
  double mean_gpu = 0.0, mean_cpu = 0.0;
  for (std::size_t s = kMeanFrom; s < c.steps.size(); ++s) {
    mean_gpu += loss(g, s);
    mean_cpu += loss(c, s);
  }
  INFO("mean loss of steps " << kMeanFrom << ".." << c.steps.size() - 1 << ": gpu "
                             << mean_gpu / double(c.steps.size() - kMeanFrom) << " cpu "
                             << mean_cpu / double(c.steps.size() - kMeanFrom));
  REQUIRE(std::abs(mean_gpu - mean_cpu) <= kMeanTolerance * mean_cpu);
}
