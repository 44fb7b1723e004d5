#pragma once
// Step timing behind `repro-audit bench`: trains a spec for warmup + N steps per thread count, in
// two kernel modes one after the other (deterministic and then nondeterministic unless the plan
// names others: bench --modes), through a TimingOps decorator over the CPU
// backend (or the CUDA backend: `bench --device cuda`), and returns the measured step times and
// the per-op times of the measured steps. On the GPU a step's time runs until its device work is
// done (Ops::synchronize) and the per-op times are device times between CUDA events
// (backend/device_timer.h); host threads do not matter there: one "thread count", 1.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "spec/spec.h"
#include "train/op_timer.h"
#include "train/trainer.h"

namespace ra::train {

inline constexpr spec::KernelMode kBenchModes[2] = {spec::KernelMode::deterministic,
                                                    spec::KernelMode::nondeterministic};

struct BenchPlan {
  std::int64_t steps = 20;  // measured steps per thread count and mode, >= 1
  std::int64_t warmup = 3;  // steps run first and not measured, >= 0
  std::vector<int> threads;
  // cpu or cuda (auto is not accepted: a benchmark says what it measured).
  spec::Device device = spec::Device::cpu;
  // --cuda-graphs on: whole steps timed, each full one a CUDA graph where the backend can
  // (RunOptions::step_graphs). No op is timed alone (an op timer sees every call, which a
  // replayed step does not make), so the op table stays empty.
  bool step_graphs = false;
  // The two modes timed, in this order; the first is the ratios' numerator (bench's "step_ratio":
  // first / second).
  std::array<spec::KernelMode, 2> modes{kBenchModes[0], kBenchModes[1]};
};

struct ModeTiming {
  spec::KernelMode mode{};
  std::vector<double> step_seconds;    // the measured steps
  std::vector<OpTime> ops;             // summed over the measured steps; none with step_graphs
  backend::StepLaunchCounts launches;  // how the run's steps were launched, warmup included
  double median_step_seconds() const;
  // Mean step time minus the ops' time per step (batch staging, the loader, the trainer's own
  // work), at least 0.
  double untimed_seconds_per_step() const;
};

struct ThreadTiming {
  int threads = 1;
  ModeTiming modes[2];  // indexed like BenchPlan::modes
};

// One row per op: its time per measured step in each mode, summed over the modes it ran in.
struct OpRow {
  std::string op;
  double ms_per_step[2] = {0.0, 0.0};  // indexed like BenchPlan::modes
  std::int64_t calls[2] = {0, 0};      // during the measured steps
};
std::vector<OpRow> op_rows(const ThreadTiming& timing);

// Called before each (thread count, mode) is trained.
using BenchProgress = std::function<void(int threads, spec::KernelMode mode)>;

// Runs the plan on the plan's device (the CPU backend, or the CUDA backend: a RuntimeFailure when
// no GPU is usable). The spec's device and eval set are ignored and its epochs and max_steps
// replaced so that each run takes exactly warmup + steps steps. InputError when `data` has no
// full batch or when warmup + steps needs more epochs than a spec may have.
std::vector<ThreadTiming> run_bench(spec::ExperimentSpec spec, const LoadedData& data,
                                    const BenchPlan& plan, const BenchProgress& progress = {});

}  // namespace ra::train
