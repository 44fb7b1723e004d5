// `repro-audit bench SPEC`: speed of the CPU backend on a spec, per thread count and kernel mode.
// For each thread count it trains the spec for warmup + N steps in deterministic and then in
// nondeterministic mode, times every op through a TimingOps decorator and reports the median
// step time, samples/s, GFLOP/s and a per-op table with the deterministic/nondeterministic
// ratio: what the reproducible kernels cost. Text on stdout, or one JSON document with --json.
// The spec's eval set is not loaded: only training steps are timed.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "commands.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "train/op_timer.h"
#include "train/trainer.h"

namespace ra::app {
namespace {

struct BenchOptions {
  std::string spec_path;
  std::int64_t steps = 20;
  std::int64_t warmup = 3;
  std::string threads;  // "" = 1 and the spec's thread count
  bool json = false;
};

constexpr spec::KernelMode kModes[] = {spec::KernelMode::deterministic,
                                       spec::KernelMode::nondeterministic};

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

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Collects the wall time of the measured steps and zeroes the op timer when warmup ends, so the
// op table covers exactly the measured steps.
class StepTimer final : public train::Observer {
 public:
  StepTimer(std::int64_t warmup, train::TimingOps*& timer) : warmup_(warmup), timer_(timer) {}
  void on_start(const train::Trainer&) override {
    if (warmup_ == 0) timer_->reset();  // parameter initialisation is not a step
  }
  void on_step(const train::Trainer&, const train::StepEvent& e) override {
    if (e.step >= warmup_) seconds.push_back(e.seconds);
    if (e.step + 1 == warmup_) timer_->reset();
  }
  std::vector<double> seconds;

 private:
  std::int64_t warmup_;
  train::TimingOps*& timer_;
};

struct ModeResult {
  spec::KernelMode mode{};
  std::vector<double> step_seconds;
  std::vector<train::OpTime> ops;
  double median_seconds() const { return median(step_seconds); }
};

ModeResult bench_one(const spec::ExperimentSpec& s, const train::LoadedData& data, int threads,
                     spec::KernelMode mode, std::int64_t warmup) {
  train::TimingOps* timer = nullptr;
  train::RunOptions options;
  options.threads = threads;
  options.mode = mode;
  // The trainer owns the backend; TimingOps owns the CPU Ops it wraps and we keep a pointer to
  // read its table after the run.
  options.make_backend = [&timer](int t) {
    auto ops = std::make_unique<train::TimingOps>(backend::make_cpu_ops(t));
    timer = ops.get();
    return std::unique_ptr<backend::Ops>(std::move(ops));
  };
  train::Trainer trainer(s, data, options);
  StepTimer steps(warmup, timer);
  trainer.run(&steps);
  return ModeResult{mode, std::move(steps.seconds), timer->times()};
}

// Per-op time per measured step, summed over the kernel modes an op ran in.
struct OpRow {
  std::string op;
  double ms_per_step[2] = {0.0, 0.0};  // indexed like kModes
};

std::vector<OpRow> op_rows(const ModeResult (&results)[2]) {
  std::vector<OpRow> rows;
  for (int m = 0; m < 2; ++m) {
    const double steps = static_cast<double>(results[m].step_seconds.size());
    for (const train::OpTime& t : results[m].ops) {
      auto it =
          std::find_if(rows.begin(), rows.end(), [&](const OpRow& r) { return r.op == t.op; });
      if (it == rows.end()) it = rows.insert(rows.end(), OpRow{t.op, {0.0, 0.0}});
      it->ms_per_step[m] += steps > 0 ? t.seconds * 1e3 / steps : 0.0;
    }
  }
  return rows;
}

int run_bench(const BenchOptions& o) {
  if (o.steps < 1) throw InputError("--steps: expected at least 1");
  if (o.warmup < 0) throw InputError("--warmup: expected 0 or more");
  spec::ExperimentSpec s = spec::load_spec(o.spec_path);
  const std::vector<int> thread_counts = parse_thread_list(o.threads, s.threads);
  s.device = spec::Device::cpu;
  s.data.eval.reset();  // only training steps are timed

  spdlog::info("loading data for {}", s.name);
  const train::LoadedData data = train::load_data(s);
  // Enough epochs for warmup + steps; max_steps stops the run exactly there.
  const std::int64_t wanted = o.warmup + o.steps;
  const std::int64_t per_epoch =
      data::BatchLoader(*data.train, s.data.batch_size, false, s.data.drop_last, {}, 0)
          .batches_per_epoch();
  if (per_epoch < 1) throw InputError(o.spec_path + ": data.train holds no full batch");
  s.train.epochs = static_cast<int>((wanted + per_epoch - 1) / per_epoch);
  s.train.max_steps = wanted;

  // Forward + backward ~ 3x forward FLOPs (backward = data grad + weight grad, each about one
  // forward's worth of multiply-adds).
  const std::int64_t forward_flops = spec::resolve_model(s.model).flops;
  const double flops_per_step = 3.0 * static_cast<double>(forward_flops) * s.data.batch_size;

  nlohmann::json doc = {{"name", s.name},
                        {"backend", "cpu"},
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
        s.name.c_str(), static_cast<long long>(o.steps), static_cast<long long>(o.warmup),
        s.data.batch_size, flops_per_step * 1e-9);

  for (const int threads : thread_counts) {
    ModeResult results[2];
    for (int m = 0; m < 2; ++m) {
      spdlog::info("{} thread(s), {} mode: {} steps", threads, spec::to_string(kModes[m]), wanted);
      results[m] = bench_one(s, data, threads, kModes[m], o.warmup);
    }
    nlohmann::json jt = {
        {"threads", threads}, {"modes", nlohmann::json::array()}, {"ops", nlohmann::json::array()}};
    if (!o.json) std::printf("\nthreads %d\n", threads);
    for (const ModeResult& r : results) {
      const double sec = r.median_seconds();
      const double samples = sec > 0 ? s.data.batch_size / sec : 0.0;
      const double gflops = sec > 0 ? flops_per_step / sec * 1e-9 : 0.0;
      jt["modes"].push_back({{"mode", spec::to_string(r.mode)},
                             {"median_step_ms", sec * 1e3},
                             {"samples_per_second", samples},
                             {"gflops", gflops},
                             {"step_ms", [&] {
                                std::vector<double> ms;
                                for (double x : r.step_seconds) ms.push_back(x * 1e3);
                                return ms;
                              }()}});
      if (!o.json)
        std::printf("  %-16s median %9.3f ms/step  %10.1f samples/s  %8.2f GFLOP/s\n",
                    spec::to_string(r.mode), sec * 1e3, samples, gflops);
    }
    if (!o.json)
      std::printf("  %-24s %12s %12s %8s\n", "op (ms/step)", "determ.", "nondeterm.", "ratio");
    for (const OpRow& row : op_rows(results)) {
      const double det = row.ms_per_step[0], nondet = row.ms_per_step[1];
      const double ratio = nondet > 0 ? det / nondet : 0.0;
      jt["ops"].push_back({{"op", row.op},
                           {"deterministic_ms_per_step", det},
                           {"nondeterministic_ms_per_step", nondet},
                           {"ratio", ratio}});
      if (!o.json) std::printf("  %-24s %12.4f %12.4f %8.3f\n", row.op.c_str(), det, nondet, ratio);
    }
    // What the op table does not see: batch staging, the loader and the trainer's own work. Mean
    // step time minus the ops' time per step, from the same measured steps.
    double untimed_ms[2] = {0.0, 0.0};
    for (int m = 0; m < 2; ++m) {
      const auto& st = results[m].step_seconds;
      double step_ms = 0.0, ops_ms = 0.0;
      for (double x : st) step_ms += x * 1e3 / static_cast<double>(st.size());
      for (const train::OpTime& t : results[m].ops)
        ops_ms += t.seconds * 1e3 / static_cast<double>(st.size());
      untimed_ms[m] = std::max(0.0, step_ms - ops_ms);
      jt["modes"][static_cast<std::size_t>(m)]["untimed_ms_per_step"] = untimed_ms[m];
    }
    if (!o.json)
      std::printf("  %-24s %12.4f %12.4f\n", "(outside Ops)", untimed_ms[0], untimed_ms[1]);
    const double det_ms = results[0].median_seconds(), nondet_ms = results[1].median_seconds();
    jt["step_ratio"] = nondet_ms > 0 ? det_ms / nondet_ms : 0.0;
    if (!o.json)
      std::printf("  step time deterministic / nondeterministic: %.3f\n",
                  jt["step_ratio"].get<double>());
    doc["results"].push_back(std::move(jt));
  }
  if (o.json) std::printf("%s\n", doc.dump(2).c_str());
  return 0;
}

}  // namespace

void register_bench(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Time training steps of a spec on the CPU per thread count and kernel mode");
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
  cmd->add_flag("--json", o->json, "Print one JSON document (and nothing else) on stdout");
  cmd->callback([&run, o] { run = [o] { return run_bench(*o); }; });
}

}  // namespace ra::app
