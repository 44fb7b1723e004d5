// `repro-audit bench SPEC`: speed of the CPU backend (or with --device cuda the CUDA backend) on
// a spec, per thread count and kernel mode. For each thread count (on the GPU: once) it trains
// the spec for warmup + N steps in deterministic and then in nondeterministic mode (or the two
// modes of --modes, in their order), times every op through a TimingOps decorator (on the GPU in
// device time, CUDA events) and reports the median step time, samples/s, GFLOP/s and a per-op
// table with the first / second mode's ratio: what the reproducible kernels cost (with --modes
// batch_invariant,deterministic: what batch invariance costs). Text on stdout, or one JSON
// document with --json. The spec's eval set is not loaded: only training steps are timed.
// --device cuda on a machine without a usable GPU: exit 3 (a device failure) with the reason.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/thread_pool.h"
#include "cuda_graphs_option.h"
#include "json_output.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "train/backend_choice.h"
#include "train/bench.h"

namespace ra::app {
namespace {

struct BenchOptions {
  std::string spec_path;
  std::int64_t steps = 20;
  std::int64_t warmup = 3;
  std::string threads;  // "" = 1 and the spec's thread count
  std::string device = "cpu";
  bool json = false;
  bool cuda_graphs = false;
  std::string modes = "deterministic,nondeterministic";
};

// "A,B": two distinct kernel modes, in that order.
std::array<spec::KernelMode, 2> parse_mode_pair(const std::string& text) {
  const std::size_t comma = text.find(',');
  const std::optional<spec::KernelMode> first =
      spec::kernel_mode_from_string(text.substr(0, comma));
  const std::optional<spec::KernelMode> second =
      comma == std::string::npos ? std::nullopt
                                 : spec::kernel_mode_from_string(text.substr(comma + 1));
  if (!first || !second || *first == *second) {
    throw InputError(
        "--modes: expected two different kernel modes as A,B (deterministic, "
        "nondeterministic, autotune, batch_invariant), got '" +
        text + "'");
  }
  return {*first, *second};
}

// "1,2,all" -> {1, 2, hardware threads}; duplicates dropped, order kept.
std::vector<int> parse_thread_list(const std::string& text, int spec_threads) {
  const auto resolve = [](int t) { return t <= 0 ? hardware_threads() : t; };
  std::vector<int> list;
  const auto push = [&list](int t) {
    if (std::find(list.begin(), list.end(), t) == list.end()) list.push_back(t);
  };
  if (text.empty()) {
    push(1);
    push(resolve(spec_threads));
    return list;
  }
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    if (item == "all") {
      push(hardware_threads());
    } else {
      std::size_t used = 0;
      int t = -1;
      try {
        t = std::stoi(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != item.size() || item.empty() || t < 0 || t > 1024)
        throw InputError(
            "--threads: expected a comma-separated list of thread counts (0..1024 or "
            "'all'), got '" +
            text + "'");
      push(resolve(t));
    }
    begin = end + 1;
  }
  return list;
}

// One kernel mode at one thread count: median step time, throughput and every measured step, as
// JSON; also one text line unless the output is JSON.
nlohmann::json mode_figures(const train::ModeTiming& r, int batch_size, double flops_per_step,
                            bool graphs, bool text) {
  const double sec = r.median_step_seconds();
  const double samples = sec > 0 ? batch_size / sec : 0.0;
  const double gflops = sec > 0 ? flops_per_step / sec * 1e-9 : 0.0;
  std::vector<double> step_ms;
  for (double x : r.step_seconds) step_ms.push_back(x * 1e3);
  if (text)
    std::printf("  %-16s median %9.3f ms/step  %10.1f samples/s  %8.2f GFLOP/s\n",
                spec::to_string(r.mode), sec * 1e3, samples, gflops);
  nlohmann::json figures = {{"mode", spec::to_string(r.mode)},
                            {"median_step_ms", sec * 1e3},
                            {"samples_per_second", samples},
                            {"gflops", gflops},
                            {"step_ms", step_ms}};
  if (!graphs) {
    figures["untimed_ms_per_step"] = r.untimed_seconds_per_step() * 1e3;
    return figures;
  }
  const backend::StepLaunchCounts& l = r.launches;
  figures["step_launch"] = step_launch_json(l);
  if (text) {
    std::printf("  %-16s steps launched: %lld captured, %lld replayed, %lld eager\n", "",
                static_cast<long long>(l.capture), static_cast<long long>(l.replay),
                static_cast<long long>(l.eager));
  }
  return figures;
}

// One op's time per step in both modes and their ratio (what its reproducible kernel costs), keyed
// by the modes' names ("deterministic_ms_per_step", "batch_invariant_calls", ...).
nlohmann::json op_figures(const train::OpRow& row, const train::ThreadTiming& timing, bool text) {
  const double first = row.ms_per_step[0], second = row.ms_per_step[1];
  const double ratio = second > 0 ? first / second : 0.0;
  if (text)
    std::printf("  %-24s %12.4f %12.4f %8.3f\n", printable(row.op).c_str(), first, second, ratio);
  const std::string a = spec::to_string(timing.modes[0].mode);
  const std::string b = spec::to_string(timing.modes[1].mode);
  return {{"op", row.op},
          {a + "_ms_per_step", first},
          {b + "_ms_per_step", second},
          {a + "_calls", row.calls[0]},
          {b + "_calls", row.calls[1]},
          {"ratio", ratio}};
}

// A mode's name in a 12-character column of the text table ("determ.", "nondeterm.", "batch_inv.").
std::string column_label(spec::KernelMode mode) {
  switch (mode) {
    case spec::KernelMode::deterministic:
      return "determ.";
    case spec::KernelMode::nondeterministic:
      return "nondeterm.";
    case spec::KernelMode::autotune:
      return "autotune";
    case spec::KernelMode::batch_invariant:
      return "batch_inv.";
  }
  return "?";
}

// Everything measured at one thread count: both modes, the per-op table, the time outside the
// ops and the first / second mode's step-time ratio.
nlohmann::json thread_figures(const train::ThreadTiming& timing, int batch_size,
                              double flops_per_step, bool gpu, bool graphs, bool text) {
  nlohmann::json jt = {{"threads", timing.threads},
                       {"modes", nlohmann::json::array()},
                       {"ops", nlohmann::json::array()}};
  if (text && gpu) {
    std::printf(graphs ? "\ndevice cuda (whole steps, each full one a CUDA graph: no op times)\n"
                       : "\ndevice cuda (op times: device time, CUDA events)\n");
  }
  if (text && !gpu) std::printf("\nthreads %d\n", timing.threads);
  for (const train::ModeTiming& r : timing.modes)
    jt["modes"].push_back(mode_figures(r, batch_size, flops_per_step, graphs, text));
  // With graphs no op is timed alone (a replayed step makes no op's launch): no table.
  if (text && !graphs)
    std::printf("  %-24s %12s %12s %8s\n", "op (ms/step)",
                column_label(timing.modes[0].mode).c_str(),
                column_label(timing.modes[1].mode).c_str(), "ratio");
  for (const train::OpRow& row : train::op_rows(timing))
    jt["ops"].push_back(op_figures(row, timing, text));
  // What the op table does not see: batch staging, the loader and the trainer's own work (on
  // the GPU also the device's idle time between ops: launch and host overhead).
  if (text && !graphs)
    std::printf("  %-24s %12.4f %12.4f\n", "(outside Ops)",
                timing.modes[0].untimed_seconds_per_step() * 1e3,
                timing.modes[1].untimed_seconds_per_step() * 1e3);
  const double first_ms = timing.modes[0].median_step_seconds();
  const double second_ms = timing.modes[1].median_step_seconds();
  jt["step_ratio"] = second_ms > 0 ? first_ms / second_ms : 0.0;
  if (text)
    std::printf("  step time %s / %s: %.3f\n", spec::to_string(timing.modes[0].mode),
                spec::to_string(timing.modes[1].mode), jt["step_ratio"].get<double>());
  return jt;
}

// The plan of the options; on the GPU, first a check that one is usable (exit 3 with the reason,
// before any data is loaded).
train::BenchPlan bench_plan(const BenchOptions& o, const spec::ExperimentSpec& s) {
  train::BenchPlan plan;
  plan.steps = o.steps;
  plan.warmup = o.warmup;
  plan.device = *spec::device_from_string(o.device);
  plan.step_graphs = o.cuda_graphs;
  plan.modes = parse_mode_pair(o.modes);
  if (plan.device == spec::Device::cpu) {
    plan.threads = parse_thread_list(o.threads, s.threads);
    return plan;
  }
  if (!o.threads.empty()) {
    throw InputError("--threads: the CPU's thread counts; --device cuda times the GPU once");
  }
  plan.threads = {1};
  const nlohmann::json gpu = train::gpu_fingerprint();
  if (!gpu.value("available", false)) {
    throw RuntimeFailure("bench --device cuda: no usable GPU: " + gpu.value("reason", "unknown"));
  }
  return plan;
}

int run_bench(const BenchOptions& o) {
  spec::ExperimentSpec s = spec::load_spec(o.spec_path);
  const train::BenchPlan plan = bench_plan(o, s);
  const bool gpu = plan.device == spec::Device::cuda;
  s.data.eval.reset();  // only training steps are timed: do not load it

  spdlog::info("loading data for {}", s.name);
  const train::LoadedData data = train::load_data(s);
  const std::int64_t wanted = o.warmup + o.steps;
  const std::vector<train::ThreadTiming> timings =
      train::run_bench(s, data, plan, [wanted, gpu](int threads, spec::KernelMode mode) {
        if (gpu) {
          spdlog::info("cuda, {} mode: {} steps", spec::to_string(mode), wanted);
        } else {
          spdlog::info("{} thread(s), {} mode: {} steps", threads, spec::to_string(mode), wanted);
        }
      });

  // Forward + backward ~ 3x forward FLOPs (backward = data grad + weight grad, each about one
  // forward's worth of multiply-adds).
  const std::int64_t forward_flops = spec::resolve_model(s.model).flops;
  const double flops_per_step = 3.0 * static_cast<double>(forward_flops) * s.data.batch_size;

  nlohmann::json doc = {{"name", s.name},
                        {"backend", gpu ? "cuda" : "cpu"},
                        {"steps", o.steps},
                        {"warmup", o.warmup},
                        {"batch_size", s.data.batch_size},
                        {"forward_flops_per_sample", forward_flops},
                        {"flops_per_step", flops_per_step},
                        {"flops_rule", "3 x forward FLOPs x batch (forward + backward)"},
                        {"results", nlohmann::json::array()}};
  if (!o.json)
    std::printf(
        "bench %s: %lld measured steps after %lld warmup, batch %d, %.3f GFLOP/step "
        "(3 x forward)\n",
        printable(s.name).c_str(), static_cast<long long>(o.steps),
        static_cast<long long>(o.warmup), s.data.batch_size, flops_per_step * 1e-9);
  if (gpu) doc["gpu"] = train::gpu_fingerprint();
  for (const train::ThreadTiming& timing : timings)
    doc["results"].push_back(
        thread_figures(timing, s.data.batch_size, flops_per_step, gpu, plan.step_graphs, !o.json));
  if (o.json) std::printf("%s\n", json_text(doc).c_str());
  return 0;
}

}  // namespace

void register_bench(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time training steps of a spec per kernel mode: on the CPU per thread count, or on the GPU");
  cmd->add_option("spec", o->spec_path, "Experiment spec (JSON)")->required();
  cmd->add_option("--steps", o->steps, "Measured steps per thread count and mode")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd->add_option("--warmup", o->warmup, "Steps run before measuring")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  cmd->add_option("--threads", o->threads,
                  "Comma-separated thread counts, 0 or 'all' = all cores (default: 1 and the "
                  "spec's)");
  cmd->add_option("--device", o->device,
                  "cpu, or cuda: the CUDA backend, its ops timed in device time (exit 3 without a "
                  "usable GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--modes", o->modes,
                  "Two kernel modes to time, in this order, as A,B; the ratios are A / B (e.g. "
                  "batch_invariant,deterministic)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON document (and nothing else) on stdout");
  add_cuda_graphs_option(*cmd, o->cuda_graphs);
  cmd->callback([&run, o] { run = [o] { return run_bench(*o); }; });
}

}  // namespace ra::app
