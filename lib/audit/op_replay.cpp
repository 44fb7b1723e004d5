// The replay that measures an op root cause's magnitude (audit/op_replay.h).
#include "audit/op_replay.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>

#include "audit/pinned_algorithms.h"
#include "compare/output_difference.h"
#include "core/error.h"
#include "record/op_recorder.h"
#include "spec/parse.h"
#include "train/backend_choice.h"
#include "train/trainer.h"

namespace ra::audit {
namespace {

using Call = record::OpRecorder::Call;
using Region = record::OpRecorder::Region;
using Bytes = std::vector<unsigned char>;

// The replay left the reference run before the op: it may be started again.
struct ReplayParted : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The op's executions are done: ends the replay's training run.
struct ReplayDone {};

// Ops a replay cannot execute again: the batch comes from the loader, and the dropout's two
// records come from one call the recorder does not show a replay (record/op_recorder.h).
bool re_executable(const std::string& op) {
  return op != "batch" && op != "dropout_mask" && op != "dropout.forward";
}

const trace::StepRecord* recorded_step(const trace::Trace& t, std::int64_t step) {
  for (const trace::StepRecord& s : t.steps) {
    if (s.step == step) return s.ops_recorded ? &s : nullptr;
  }
  return nullptr;
}

// An injected op fault (--inject-fault op=, trace header "fault"): the bit it flipped.
struct Flip {
  std::int64_t element = 0;
  int bit = 0;
};

// The flip a run's fault made in the root-cause op's output: the fault names the op's layer and
// the step, and hits the first execution of that op in the layer, so none may come before.
std::optional<Flip> fault_at(const trace::Trace& run, const compare::RootCause& c,
                             const trace::StepRecord& step) {
  const nlohmann::json& f = run.header.fault;
  if (!f.is_object() || f.value("op", "") != c.record.layer + "/" + c.record.op ||
      f.value("step", std::int64_t(-1)) != c.step) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < c.index && i < step.ops.size(); ++i) {
    if (step.ops[i].op == c.record.op && step.ops[i].layer == c.record.layer) return std::nullopt;
  }
  return Flip{f.value("element", std::int64_t(0)), f.value("bit", 0)};
}

// One run whose outputs of the op the executions look for.
struct Target {
  int run = 0;
  std::vector<Digest128> out;  // as recorded
  std::optional<Flip> flip;
  std::optional<std::vector<Bytes>> found;
  // The algorithms of the run's ledger (a GPU run): for a cause of class algorithm choice, the op
  // is executed with them when this run's outputs are looked for. Null: the replay's own.
  std::shared_ptr<const backend::AlgorithmPins> pins;
};

// The convolution algorithms of a run's ledger as pins for a replay (backend/algorithm_pins.h),
// or null when it names none (a CPU run has one algorithm per op: nothing to pin).
std::shared_ptr<const backend::AlgorithmPins> pins_of_run(const trace::Trace& run) {
  backend::AlgorithmPins pins =
      ledger_pins(run.header.ledger, "the ledger of run " + std::to_string(run.header.run_index));
  if (pins.pins.empty()) return nullptr;
  return std::make_shared<const backend::AlgorithmPins>(std::move(pins));
}

Digest128 digest_of(const Region& r, const Bytes& bytes) {
  return digest_bytes(r.dtype, Shape{r.count}, bytes.data(), bytes.size());
}

std::vector<Bytes> read_call_outputs(record::OpRecorder& recorder, const Call& call) {
  std::vector<Bytes> out;
  for (const Region& r : call.outputs) out.push_back(recorder.read(r));
  return out;
}

std::vector<Digest128> digests_of(const Call& call, const std::vector<Bytes>& outputs) {
  std::vector<Digest128> d;
  for (std::size_t i = 0; i < outputs.size(); ++i)
    d.push_back(digest_of(call.outputs[i], outputs[i]));
  return d;
}

// Back to back, the executions of a racing op find the workers in the same state and tend to
// finish in one order; in the run, other work came between. Pauses of varied length before each
// execution (workers parked or still awake, caches cold or warm) bring the other orders out.
void vary_timing(int execution) {
  static constexpr int kMicroseconds[] = {0, 30, 300, 3000, 10, 1000, 100};
  const int us = kMicroseconds[execution % std::size(kMicroseconds)];
  if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

std::string where(const Call& c) {
  return "op " + std::to_string(c.index + 1) + " of step " + std::to_string(c.step) + " (" +
         c.opened->op + " in " + c.opened->layer + ")";
}

// One replay of the reference run, driven through the recorder's hook.
class Replay {
 public:
  Replay(const trace::Trace& reference, const compare::RootCause& cause,
         std::vector<Target>& targets, const ReplayLimits& limits)
      : ref_(reference), cause_(cause), targets_(targets), limits_(limits) {}

  void on_op(record::OpRecorder& recorder, const Call& call) {
    if (call.step == cause_.step && call.index == cause_.index) {
      execute_root_cause(recorder, call);
      throw ReplayDone{};
    }
    steer(recorder, call);
  }
  int executions() const { return executions_; }
  int distinct_outputs() const { return static_cast<int>(distinct_.size()); }
  const std::vector<DType>& output_dtypes() const { return dtypes_; }
  const std::vector<compare::RootCause::OutputDifference>& spread() const { return spread_; }

 private:
  // Executes an op on the way, again while its outputs are not the reference run's.
  void steer(record::OpRecorder& recorder, const Call& call) {
    call.execute();
    const trace::StepRecord* step = recorded_step(ref_, call.step);
    if (step == nullptr || call.index >= step->ops.size()) return;  // nothing to steer by
    const trace::OpRecord& want = step->ops[call.index];
    if (want.op != call.opened->op || want.layer != call.opened->layer) {
      throw ReplayParted(where(call) + " is " + want.op + " in the reference run");
    }
    if (want.in != call.opened->in) {
      throw ReplayParted("the inputs of " + where(call) + " differ from the reference run's");
    }
    for (int n = 1; digests_of(call, read_call_outputs(recorder, call)) != want.out; ++n) {
      if (n >= limits_.executions) {
        throw ReplayParted(std::to_string(n) + " executions of " + where(call) +
                           " did not reproduce the reference run's outputs");
      }
      call.execute();
    }
  }

  void execute_root_cause(record::OpRecorder& recorder, const Call& call) {
    if (call.opened->op != cause_.record.op || call.opened->layer != cause_.record.layer) {
      throw ReplayParted(where(call) + " is " + cause_.record.op + " in the reference run");
    }
    if (call.opened->in != cause_.record.in) {
      throw ReplayParted("the inputs of the root-cause op differ from the reference run's");
    }
    for (const Region& r : call.outputs) dtypes_.push_back(r.dtype);
    if (cause_.cause == compare::RootCause::Class::algorithm_choice) {
      execute_with_each_algorithm(recorder, call);
      return;
    }
    execute_until_found(recorder, call, limits_.executions);
  }

  // An algorithm choice: each run's outputs are those of its own algorithm, so the op is executed
  // with each run's ledger pinned in turn (deterministic algorithms: once each).
  void execute_with_each_algorithm(record::OpRecorder& recorder, const Call& call) {
    for (Target& t : targets_) {
      if (t.found) continue;
      recorder.pin_algorithms(t.pins);
      execute_until_found(recorder, call, std::min(limits_.executions, executions_ + 64));
    }
  }

  // Executes the op on its recorded inputs, offering every outcome to the targets, until each is
  // found, `until` executions were made or the time limit passed.
  void execute_until_found(record::OpRecorder& recorder, const Call& call, int until) {
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const int first = executions_;
    while (executions_ < until && (executions_ == first || elapsed() < limits_.seconds)) {
      vary_timing(executions_);
      call.execute();
      ++executions_;
      const std::vector<Bytes> outputs = read_call_outputs(recorder, call);
      const std::vector<Digest128> digests = digests_of(call, outputs);
      std::string key;
      for (const Digest128& d : digests) key += d.hex();
      if (distinct_.insert(std::move(key)).second) note_outcome(outputs);
      bool all = true;
      for (Target& t : targets_) {
        if (!t.found) offer(call, outputs, digests, t);
        all = all && t.found.has_value();
      }
      if (all) return;
    }
  }

  // A new outcome: how far it is from the first execution's.
  void note_outcome(const std::vector<Bytes>& outputs) {
    if (first_.empty()) {
      first_ = outputs;
      return;
    }
    for (const auto& d : compare::output_differences(first_, outputs, dtypes_)) widen(spread_, d);
  }

  // Whether this execution's outputs, with the target run's fault applied, are the run's.
  static void offer(const Call& call, const std::vector<Bytes>& outputs,
                    const std::vector<Digest128>& digests, Target& t) {
    if (!t.flip) {
      if (digests == t.out) t.found = outputs;
      return;
    }
    const std::size_t k = call.fault_output;
    if (k >= outputs.size() || call.outputs[k].dtype != DType::f32 ||
        t.flip->element >= call.outputs[k].count) {
      return;
    }
    std::vector<Bytes> flipped = outputs;
    std::uint32_t bits = 0;
    unsigned char* at = flipped[k].data() + t.flip->element * 4;
    std::memcpy(&bits, at, 4);
    bits ^= std::uint32_t(1) << t.flip->bit;
    std::memcpy(at, &bits, 4);
    std::vector<Digest128> d = digests;
    d[k] = digest_of(call.outputs[k], flipped[k]);
    if (d == t.out) t.found = std::move(flipped);
  }

  const trace::Trace& ref_;
  const compare::RootCause& cause_;
  std::vector<Target>& targets_;
  const ReplayLimits& limits_;
  int executions_ = 0;
  std::set<std::string> distinct_;  // the executions' output digests, as hex
  std::vector<DType> dtypes_;
  std::vector<Bytes> first_;  // the first execution's outputs
  std::vector<compare::RootCause::OutputDifference> spread_;
};

// Starts each step of the replay on the recorder: recorded where the reference recorded it, up
// to the root cause's step.
class ReplaySteps final : public train::Observer {
 public:
  ReplaySteps(record::OpRecorder& recorder, const trace::OpWindow& window, std::int64_t last)
      : recorder_(recorder), window_(window), last_(last) {}
  void before_step(data::Batch& batch, std::int64_t step) override {
    recorder_.begin_step(step, window_.contains(step) && step <= last_);
    recorder_.record_batch(batch);
  }
  void on_step(const train::Trainer&, const train::StepEvent&) override {
    recorder_.take_records();
  }

 private:
  record::OpRecorder& recorder_;
  trace::OpWindow window_;
  std::int64_t last_;
};

// The reference run's spec as it ran: its policy, backend and thread count.
spec::ExperimentSpec spec_of(const trace::TraceHeader& h) {
  nlohmann::json doc = h.spec;
  doc["determinism"] = h.determinism;
  doc["device"] = h.backend;
  doc["threads"] = h.threads;
  return spec::parse_spec(doc, "");
}

// One replay: true when it reached the op (its executions are done), false when it ended first.
bool replay_once(const trace::Trace& ref, const train::LoadedData& data, Replay& replay,
                 const compare::RootCause& cause) {
  const trace::TraceHeader& h = ref.header;
  train::RunOptions options;
  options.threads = h.threads;
  options.seeds = train::RunSeeds{h.seed_init, h.seed_data, h.seed_dropout, h.seed_augment};
  // The algorithms the reference run ran, not those a new autotune would choose.
  options.algorithm_pins = pins_of_run(ref);
  record::OpRecorder* recorder = nullptr;
  options.wrap_backend = [&recorder](backend::Ops& backend) {
    auto ops = std::make_unique<record::OpRecorder>(backend, backend.threads());
    recorder = ops.get();
    return std::unique_ptr<backend::Ops>(std::move(ops));
  };
  train::Trainer trainer(spec_of(h), data, options);
  if (trainer.ops().name() != h.backend) {
    throw RuntimeFailure("the replay trains on " + trainer.ops().name() +
                         ", the reference run trained on " + h.backend);
  }
  recorder->set_replay_hook([&](const Call& call) { replay.on_op(*recorder, call); });
  ReplaySteps steps(*recorder, h.trace_ops.value_or(trace::OpWindow{}), cause.step);
  try {
    trainer.run(&steps);
  } catch (const ReplayDone&) {
    return true;
  }
  return false;
}

// The differences of one run's outputs from the reference's, where their digests differ.
compare::RootCause::RunMagnitude magnitude_of(const Target& ref, const Target& run,
                                              const std::vector<DType>& dtypes) {
  compare::RootCause::RunMagnitude m;
  m.run = run.run;
  for (compare::RootCause::OutputDifference& d :
       compare::output_differences(*ref.found, *run.found, dtypes)) {
    if (ref.out[d.output] != run.out[d.output]) m.outputs.push_back(d);
  }
  return m;
}

std::string run_name(int run, bool reference) {
  return (reference ? "the reference run (" : "run ") + std::to_string(run) +
         (reference ? ")" : "");
}

// The targets: the reference run first, then each run of the cause.
std::vector<Target> targets_of(const compare::RootCause& c, const std::vector<trace::Trace>& traces,
                               int reference) {
  std::vector<Target> targets;
  std::vector<int> runs{reference};
  runs.insert(runs.end(), c.runs.begin(), c.runs.end());
  for (int run : runs) {
    const trace::Trace& t = traces[static_cast<std::size_t>(run)];
    const trace::StepRecord* step = recorded_step(t, c.step);
    Target target;
    target.run = run;
    target.pins = pins_of_run(t);
    if (step != nullptr && c.index < step->ops.size()) {
      target.out = step->ops[c.index].out;
      target.flip = fault_at(t, c, *step);
    }
    targets.push_back(std::move(target));
  }
  return targets;
}

// The outputs a run kept as it ran (record/kept_outputs.h), when their digests are the ones its
// trace recorded for the op.
bool take_kept(Target& t, const trace::Trace& run, const compare::RootCause& c,
               const record::KeptOutputs* kept, std::vector<DType>& dtypes) {
  if (kept == nullptr || t.out.empty()) return false;
  std::optional<record::KeptOutputs::Outputs> o = kept->find(run.header.run_index, c.step, c.index);
  if (!o || o->bytes.size() != t.out.size()) return false;
  for (std::size_t i = 0; i < o->bytes.size(); ++i) {
    const std::size_t bytes = o->bytes[i].size();
    const Shape shape{static_cast<std::int64_t>(bytes / dtype_bytes(o->dtypes[i]))};
    if (digest_bytes(o->dtypes[i], shape, o->bytes[i].data(), bytes) != t.out[i]) return false;
  }
  t.found = std::move(o->bytes);
  dtypes = o->dtypes;
  return true;
}

// Replays until one reaches the op, looking for the targets not found yet; false with the note
// set when none did.
bool replay_for(const compare::RootCause& c, const trace::Trace& ref, const train::LoadedData& data,
                const ReplayLimits& limits, std::vector<Target>& targets,
                std::vector<DType>& dtypes, compare::RootCause::Magnitude& m) {
  std::string parted;
  while (m.replays < limits.replays) {
    ++m.replays;
    Replay replay(ref, c, targets, limits);
    try {
      if (!replay_once(ref, data, replay, c)) {
        m.note = "the replay ended before reaching the op";
        return false;
      }
    } catch (const ReplayParted& e) {
      parted = e.what();
      continue;
    }
    m.executions = replay.executions();
    m.distinct_outputs = replay.distinct_outputs();
    m.spread = replay.spread();
    dtypes = replay.output_dtypes();
    return true;
  }
  m.note = std::to_string(m.replays) + " replays of the reference run parted from it before " +
           "the op; the last: " + parted;
  return false;
}

// This machine's GPU, whether a replay could use one (asked once per process: it does not change).
const nlohmann::json& gpu_here() {
  static const nlohmann::json gpu = train::gpu_fingerprint();
  return gpu;
}

// The magnitude of every run whose outputs were kept or appeared in a replay.
compare::RootCause::Magnitude measure(const compare::RootCause& c,
                                      const std::vector<trace::Trace>& traces, int reference,
                                      const std::function<const train::LoadedData&()>& data,
                                      const ReplayLimits& limits, const record::KeptOutputs* kept) {
  compare::RootCause::Magnitude m;
  std::vector<Target> targets = targets_of(c, traces, reference);
  std::vector<DType> dtypes;
  bool all_kept = true;
  for (Target& t : targets) {
    const bool taken = take_kept(t, traces[static_cast<std::size_t>(t.run)], c, kept, dtypes);
    m.kept += taken ? 1 : 0;
    all_kept = all_kept && taken;
  }
  bool replayed = false;
  const trace::TraceHeader& ref_header = traces[static_cast<std::size_t>(reference)].header;
  const bool pytorch = ref_header.backend.starts_with("pytorch");
  if (!all_kept && pytorch) {
    // Said below, with the runs: a PyTorch run is never replayed.
  } else if (!all_kept && ref_header.backend == "cuda" && !gpu_here().value("available", false)) {
    // Said before any data is looked for: the data files of a GPU machine are often elsewhere.
    m.note =
        "the replay cannot run here: the runs trained on the GPU and this machine has none "
        "usable (" +
        gpu_here().value("reason", std::string("no reason given")) + ")";
  } else if (!all_kept) {
    try {
      replayed = replay_for(c, traces[static_cast<std::size_t>(reference)], data(), limits, targets,
                            dtypes, m);
    } catch (const InputError& e) {
      m.note = std::string("the replay cannot run here: ") + e.what();
    } catch (const RuntimeFailure& e) {
      m.note = std::string("the replay cannot run here: ") + e.what();
    }
  }
  std::string missing;  // the runs whose outputs were neither kept nor appeared
  for (const Target& t : targets) {
    if (!t.found) missing += (missing.empty() ? "" : ", ") + run_name(t.run, t.run == reference);
  }
  if (pytorch && !missing.empty()) {
    m.note = "the outputs of " + missing +
             " were not kept (the recorder keeps those of order-dependent ops: sums, matrix "
             "products, convolutions, accumulating scatters, normalisations; up to "
             "REPRO_AUDIT_KEEP_BYTES per run, the first steps first); to keep this op's, run "
             "exec again with --keep-op " +
             std::to_string(c.step) + ":" + std::to_string(c.index);
  }
  if (replayed && !missing.empty()) {
    m.note = "the outputs of " + missing + " did not appear in " + std::to_string(m.executions) +
             " executions of the op (" + std::to_string(m.distinct_outputs) + " distinct)";
  }
  if (!targets[0].found) return m;
  for (std::size_t i = 1; i < targets.size(); ++i) {
    if (targets[i].found) m.runs.push_back(magnitude_of(targets[0], targets[i], dtypes));
  }
  return m;
}

}  // namespace

void measure_magnitudes(compare::ComparisonResult& result, const std::vector<trace::Trace>& traces,
                        const ReplayLimits& limits, const record::KeptOutputs* kept) {
  if (result.identity.compared_runs.empty()) return;
  const int reference = result.identity.compared_runs.front();
  std::optional<train::LoadedData> loaded;  // once, for the first replay
  const auto data = [&]() -> const train::LoadedData& {
    if (!loaded) {
      loaded = train::load_data(spec_of(traces[static_cast<std::size_t>(reference)].header));
    }
    return *loaded;
  };
  for (compare::RootCause& c : result.root_cause.causes) {
    if (c.kind != compare::RootCause::Kind::op) continue;
    if (!re_executable(c.record.op)) {
      c.magnitude = compare::RootCause::Magnitude{};
      c.magnitude->note = c.record.op == "batch"
                              ? "not measured: the loader assembles the batch, no op computes it"
                              : "not measured: a replay does not execute " + c.record.op + " again";
      continue;
    }
    c.magnitude = measure(c, traces, reference, data, limits, kept);
  }
}

}  // namespace ra::audit
