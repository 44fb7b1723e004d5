#include "train/bench.h"

#include <algorithm>
#include <memory>
#include <string>

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/integer_math.h"
#include "core/statistics.h"
#include "train/backend_choice.h"

namespace ra::train {
namespace {

// The most epochs a spec may ask for (spec/parse.cpp's train.epochs range).
constexpr std::int64_t kMaxEpochs = 100000;

// Collects the wall time of the measured steps and zeroes the op table when warmup ends, so the
// table covers exactly the measured steps.
class StepTimer final : public Observer {
 public:
  // `timer`: null when no op is timed (BenchPlan::step_graphs).
  StepTimer(std::int64_t warmup, TimingOps* timer) : warmup_(warmup), timer_(timer) {}
  void on_step(const Trainer&, const StepEvent& e) override {
    if (e.step >= warmup_) seconds.push_back(e.seconds);
    if (e.step + 1 == warmup_ && timer_ != nullptr) timer_->reset();
  }
  std::vector<double> seconds;

 private:
  std::int64_t warmup_;
  TimingOps* timer_;
};

ModeTiming time_mode(const spec::ExperimentSpec& spec, const LoadedData& data, int threads,
                     spec::KernelMode mode, const BenchPlan& plan) {
  // The trainer owns the backend; the TimingOps it gets owns the Ops it wraps, and `timer`
  // points at it to read its table after the run. With step graphs no op is timed alone.
  TimingOps* timer = nullptr;
  RunOptions options;
  options.threads = threads;
  options.mode = mode;
  options.step_graphs = plan.step_graphs;
  options.make_backend = [&timer, &spec, &plan, mode](int t) {
    std::unique_ptr<backend::Ops> inner = spec.device == spec::Device::cpu
                                              ? backend::cpu::make_cpu_ops(t)
                                              : make_backend(spec.device, t, mode).ops;
    if (plan.step_graphs) return inner;
    auto ops = std::make_unique<TimingOps>(std::move(inner));
    timer = ops.get();
    return std::unique_ptr<backend::Ops>(std::move(ops));
  };
  Trainer trainer(spec, data, options);
  // Initialisation calls no op, so with no warmup the fresh table already covers only steps.
  StepTimer steps(plan.warmup, timer);
  const TrainResult result = trainer.run(&steps);
  ModeTiming timing{mode, std::move(steps.seconds), {}, result.step_launches};
  if (timer != nullptr) timing.ops = timer->times();
  return timing;
}

}  // namespace

double ModeTiming::median_step_seconds() const {
  return median(step_seconds);
}

double ModeTiming::untimed_seconds_per_step() const {
  if (step_seconds.empty()) return 0.0;
  double step = 0.0, in_ops = 0.0;
  for (double s : step_seconds) step += s;
  for (const OpTime& t : ops) in_ops += t.seconds;
  return std::max(0.0, (step - in_ops) / static_cast<double>(step_seconds.size()));
}

std::vector<OpRow> op_rows(const ThreadTiming& timing) {
  std::vector<OpRow> rows;
  for (int m = 0; m < 2; ++m) {
    const ModeTiming& r = timing.modes[m];
    const double steps = static_cast<double>(r.step_seconds.size());
    for (const OpTime& t : r.ops) {
      auto it =
          std::find_if(rows.begin(), rows.end(), [&](const OpRow& row) { return row.op == t.op; });
      if (it == rows.end()) it = rows.insert(rows.end(), OpRow{t.op});
      it->ms_per_step[m] += steps > 0 ? t.seconds * 1e3 / steps : 0.0;
      it->calls[m] += t.calls;
    }
  }
  return rows;
}

std::vector<ThreadTiming> run_bench(spec::ExperimentSpec spec, const LoadedData& data,
                                    const BenchPlan& plan, const BenchProgress& progress) {
  if (plan.steps < 1) throw InputError("bench: expected at least 1 measured step");
  if (plan.warmup < 0) throw InputError("bench: expected 0 or more warmup steps");
  if (plan.device == spec::Device::auto_select) {
    throw InputError("bench: expected the device cpu or cuda, not auto");
  }
  spec.device = plan.device;
  spec.data.eval.reset();  // only training steps are timed
  const std::int64_t per_epoch = batches_per_epoch(spec, *data.train);
  if (per_epoch < 1) throw InputError("bench: data.train holds no full batch");
  // Enough epochs for warmup + steps; max_steps stops the run exactly there.
  const std::int64_t wanted = plan.warmup + plan.steps;
  const std::int64_t epochs = ceil_div(wanted, per_epoch);
  if (plan.steps > kMaxEpochs * per_epoch || epochs > kMaxEpochs) {
    throw InputError("bench: " + std::to_string(plan.warmup) + " warmup + " +
                     std::to_string(plan.steps) + " measured steps need " + std::to_string(epochs) +
                     " epochs of " + std::to_string(per_epoch) +
                     " steps; a spec may have at most " + std::to_string(kMaxEpochs));
  }
  spec.train.epochs = static_cast<int>(epochs);
  spec.train.max_steps = wanted;

  std::vector<ThreadTiming> timings;
  for (const int threads : plan.threads) {
    ThreadTiming t;
    t.threads = threads;
    for (int m = 0; m < 2; ++m) {
      if (progress) progress(threads, plan.modes[m]);
      t.modes[m] = time_mode(spec, data, threads, plan.modes[m], plan);
    }
    timings.push_back(std::move(t));
  }
  return timings;
}

}  // namespace ra::train
