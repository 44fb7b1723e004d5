#pragma once
// The trace of one run (docs/trace-format.md): everything a verdict is computed from. Digests say
// whether two runs did the same thing at each point; the loss is kept as exact bits.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/digest.h"
#include "core/tensor.h"
#include "trace/resume_point.h"

namespace ra::trace {

// Version 1: no op records. Version 2: the run recorded its ops (--trace-ops): the header's
// trace_ops window and the steps' op records; everything else as in version 1. Version 3 (the
// PyTorch recorder's): the end record says how the run ended (completed, or failed with the
// exception's type), parameters and buffers carry their dtype and may be 0-dim or empty, buffers
// are recorded beside the parameters, and op records are there when the header has a window.
// A reader of versions 1 and 2 refuses version 3 by its number, so it never takes a failed run
// for a whole one. Version 4: version 3 with a level of detail (trace/tensor_digests.h): the
// header's `tensor_digests` says which steps record a digest per tensor; the others record one
// digest per category. Both recorders write it when asked for less than every step per tensor.
inline constexpr int kTraceFormatVersion = 1;
inline constexpr int kTraceFormatVersionWithOps = 2;
inline constexpr int kTraceFormatVersionWithStatus = 3;
inline constexpr int kTraceFormatVersionWithDetail = 4;
inline constexpr int kTraceFormatVersionNewest = kTraceFormatVersionWithDetail;

// Whether a trace's records have version 3's shape (dtypes, buffers, an end status): versions 3
// and 4.
inline bool has_status_records(int format_version) {
  return format_version >= kTraceFormatVersionWithStatus;
}

// The dtypes a version 3 header names (docs/trace-format.md "Digests"): the digest's tag and the
// tensor's raw bytes. Versions 1 and 2 record f32 parameters only.
inline constexpr const char* kTraceDTypes[] = {
    "f32", "i32", "i64",  "u8",  "f16", "bf16", "f64",      "i16",    "i8",         "bool",
    "c32", "c64", "c128", "u16", "u32", "u64",  "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz"};

// An audit id (rundir/manifest.h): 32 lowercase hex digits.
inline bool is_audit_id(const std::string& text) {
  return text.size() == 32 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

struct TensorInfo {
  std::string name;
  Shape shape;                // [] for a 0-dim tensor (version 3); a dimension may be 0 (version 3)
  std::string dtype = "f32";  // one of kTraceDTypes
  friend bool operator==(const TensorInfo&, const TensorInfo&) = default;
};

// The steps whose ops a run recorded (--trace-ops A:B, A: or all): steps first..last-1, to the
// run's end when last is absent.
struct OpWindow {
  std::int64_t first = 0;
  std::optional<std::int64_t> last;
  bool contains(std::int64_t step) const { return step >= first && (!last || step < *last); }
  friend bool operator==(const OpWindow&, const OpWindow&) = default;
};

// The level of detail of a version 4 trace (trace/tensor_digests.h, docs/trace-format.md "Levels
// of detail"): the steps that record a digest per tensor (every gradient, weight and buffer) are
// every `every`-th step (0, K, 2K, ...) and every step of each window; the others record one
// digest per category.
struct TensorDigestPlan {
  std::optional<std::int64_t> every;  // none: only the windows
  std::vector<OpWindow> windows;
  bool at(std::int64_t step) const {
    if (every && step % *every == 0) return true;
    for (const OpWindow& w : windows)
      if (w.contains(step)) return true;
    return false;
  }
  // Every step per tensor, as in versions 1 to 3.
  bool all() const {
    if (every == 1) return true;
    for (const OpWindow& w : windows)
      if (w.first == 0 && !w.last) return true;
    return false;
  }
  friend bool operator==(const TensorDigestPlan&, const TensorDigestPlan&) = default;
};

// One op execution of a step, in execution order (record/op_recorder.h, docs/trace-format.md).
struct OpRecord {
  std::string op;          // "conv2d.forward", "dense.backward_weight", "batch", "dropout_mask"...
  std::string layer;       // "conv2d_0"; "loss"; the parameter of an optimizer.update; "" (batch)
  std::string mode;        // kernel mode of a reducing op ("deterministic"...); "" for the others
  std::string ledger_key;  // geometry key of a conv or dense op, as the algorithm ledger keys it
  std::vector<Digest128> in, out;  // digests of the inputs and outputs, in the op's order
  // The algorithm the call ran, as its backend names it (backend/ops.h algorithm_used): a cuDNN or
  // cuBLAS algorithm or custom kernel (the ledger entry of ledger_key and the op's direction), or
  // the CPU kernel ("cpu avx512-fma, fixed reduction tree"); "" for ops without a ledger key and
  // in traces written before op records named it (the header's ledger then says it).
  // (Default member initializers: records built as {op, layer, mode, key, in, out} stay complete.)
  std::string algorithm{};
  std::optional<bool> algorithm_deterministic{};  // set with `algorithm`
  // What each input and output is, in PyTorch traces (lib/python/repro_audit/op_records.py): a
  // tensor's dtype and shape ("f32[64,10]"), "args" (the call's non-tensor arguments), "generator"
  // (the random state a random op drew from), "value" (a non-tensor result); empty in the
  // engine's records, whose positions the op names (trace/op_names.h).
  std::vector<std::string> in_types{}, out_types{};
  friend bool operator==(const OpRecord&, const OpRecord&) = default;
  // Whether two records are the same execution: op, layer, mode, key and digests (the algorithm
  // is what explains a difference, not one itself).
  bool same_execution(const OpRecord& o) const {
    return op == o.op && layer == o.layer && mode == o.mode && ledger_key == o.ledger_key &&
           in == o.in && out == o.out;
  }
};

// The one bit of one initial weight a run of the perturbed group flipped (--seeds all, exec's
// REPRO_AUDIT_PERTURB; docs/statistics.md): by design its only difference from the same-seed runs.
struct Perturbation {
  std::string tensor;        // the parameter's name
  std::int64_t element = 0;  // flat index within it (C order)
  int bit = 0;               // 0: the lowest mantissa bit of an f32
  std::uint32_t before = 0;  // the weight's bits as initialised
  std::uint32_t after = 0;   // and as the run started (before ^ 1 << bit)
  friend bool operator==(const Perturbation&, const Perturbation&) = default;
};

// Where a run's predicted classes of the eval set lie (a .npy of int64 beside the trace, `file`
// relative to the trace's folder) and the digest of those values (core/digest.h, i64 [samples]):
// the file is used only when it holds exactly what the run recorded.
struct PredictionsRecord {
  std::string file;  // "run-000/predictions.npy"
  std::int64_t samples = 0;
  Digest128 digest;
  friend bool operator==(const PredictionsRecord&, const PredictionsRecord&) = default;
};

// Where a run's process stood in a data-parallel run (the PyTorch recorder's `distributed`
// header field, docs/distributed.md): its rank, the world size, the process group's backend
// ("gloo", "nccl"; "unknown" when the recorder ran before the group was made) and the NCCL_*
// variables that pin NCCL's reduction (NCCL_ALGO, NCCL_PROTO), as {name: value}, when set.
// `comm_hook` and `bucket_cap_bytes` are set when the recorder wrapped a DDP model's
// communication hook (lib/python/repro_audit/collective.py): "default" (DDP's all-reduce) or the
// script's hook's name, and DDP's bucket size cap.
struct RankPlacement {
  int rank = 0;
  int world_size = 1;
  std::string backend;
  std::vector<std::pair<std::string, std::string>> nccl;
  std::string comm_hook{};                         // "" when no hook was wrapped
  std::optional<std::int64_t> bucket_cap_bytes{};  // set with comm_hook
};

// One gradient bucket's collective in a step of a data-parallel run (the step's `collectives`,
// in call order): the bucket's index, its parameters in the bucket's order, its flat buffer's
// size and dtype, and the buffer's digest before the collective and of its result after it.
struct CollectiveRecord {
  std::int64_t bucket = 0;
  std::vector<std::string> params;
  std::int64_t elements = 0;
  std::string dtype = "f32";
  Digest128 before, after;
  friend bool operator==(const CollectiveRecord&, const CollectiveRecord&) = default;
};

struct TraceHeader {
  int format_version = kTraceFormatVersion;
  std::string tool_version;
  // The audit the run belongs to (its folder's manifest, audit.json); empty in traces written
  // before audit ids existed, which are read as such.
  std::string audit_id;
  nlohmann::json spec;      // canonical resolved spec (spec::to_json)
  std::string spec_digest;  // XXH3-128 of spec.dump()
  int run_index = 0;
  std::string seed_group;  // "same", "different" (--seeds both) or "perturbed" (--seeds all)
  std::optional<Perturbation> perturbation;  // set exactly in the perturbed group's runs
  std::uint64_t seed_init = 0, seed_data = 0, seed_dropout = 0;
  // The data augmentation's, when the run's plan gave it its own (--vary augment): "seeds.augment"
  // in the header, absent otherwise (the data seed's).
  std::optional<std::uint64_t> seed_augment;
  std::string backend;
  int threads = 0;
  nlohmann::json determinism;  // {"mode": ..., "ops": {...}}: the policy actually used
  nlohmann::json environment;  // environment fingerprint
  nlohmann::json ledger = nlohmann::json::array();  // algorithm ledger (empty on the CPU)
  std::vector<TensorInfo> params;                   // order of every per-parameter digest list
  // Buffers (version 3): BatchNorm's running statistics and the like, state a model keeps that
  // is no parameter; the order of every per-buffer digest list. Empty in versions 1 and 2.
  std::vector<TensorInfo> buffers;
  std::vector<std::string> optimizer_state;  // names of the optimizer state tensors
  nlohmann::json fault;                      // test-only fault injection applied, or null
  std::optional<OpWindow> trace_ops;  // set when the run recorded op records (format version 2)
  // The PyTorch recorder's, optional (absent: null or empty, as in the engine's traces and older
  // ones): `rng_states`, digests of the random states ({"torch": hex, "cuda": [hex...], ...}) when
  // the recorder was made; `seeded`, {"seed", "rng_states"} right after seed_everything; what the
  // recorder found misused (lib/python/repro_audit/misuse.py), in words.
  nlohmann::json rng_states;
  nlohmann::json seeded;
  std::vector<std::string> recorder_warnings;
  // Version 4: the steps recorded per tensor (trace/tensor_digests.h); none: every step.
  std::optional<TensorDigestPlan> tensor_digests;
  // The recorder's, optional: the rank of a data-parallel run this trace is (absent: a single
  // process). Rank 0's trace is the run's; rank r's is run-NNN/rank-R.trace.jsonl.
  std::optional<RankPlacement> distributed;
};

// One training step, recorded after the optimizer update.
struct StepRecord {
  std::int64_t step = 0;  // global, 0-based
  std::int64_t epoch = 0;
  std::int64_t batch = 0;   // index within the epoch
  Digest128 batch_indices;  // the sample indices (int64)
  Digest128 batch_inputs;   // the input tensor [B, C, H, W]
  Digest128 batch_labels;   // the labels (int32)
  std::uint32_t loss_bits = 0;
  std::vector<Digest128> grads;    // per parameter, header order
  std::vector<Digest128> weights;  // per parameter after the update
  std::vector<Digest128> buffers;  // per buffer after the step (version 3)
  Digest128 optimizer_state;       // over all optimizer state tensors after the update
  // A step a version 4 trace records per category: grads, weights and buffers are empty, and
  // these hold category_digest (trace/tensor_digests.h) of each; unset when per_tensor.
  bool per_tensor = true;
  Digest128 grads_digest, weights_digest, buffers_digest;
  double seconds = 0.0;
  bool ops_recorded = false;  // the step is in the trace's op window
  std::vector<OpRecord> ops;  // its op records, in execution order
  // A data-parallel run's buckets through the collective (none: not recorded, or no bucket).
  std::vector<CollectiveRecord> collectives;
};

struct EpochRecord {
  std::int64_t epoch = 0;
  std::int64_t steps = 0;
  double mean_train_loss = 0.0;
  std::optional<double> eval_loss, eval_accuracy;
  double seconds = 0.0;
};

// The random streams one data-loader worker started from, in a trace of a PyTorch script whose
// loader the recorder watched (lib/python/repro_audit/workers.py): the pass over the data (the
// base seed PyTorch drew for it), the worker and the loader's worker count, and a digest per
// stream ("numpy", "torch", "python_random", "dataset.rng", ...), sorted by name.
struct LoaderWorker {
  std::uint64_t loader_pass = 0;
  int worker = 0;
  int workers = 0;
  std::vector<std::pair<std::string, Digest128>> streams;
  friend bool operator==(const LoaderWorker&, const LoaderWorker&) = default;
};

// How a run ended (version 3's end record; a trace of version 1 or 2 is written only when its
// run completed). A failed run's trace is never compared as a whole run.
enum class RunStatus { completed, failed };

// What recording cost the run, measured rather than summed: the run's median step, timed from
// one step's start to the next (loader, step and every observer: what an audited step takes),
// against the same median of a few steps trained with recording off (record/step_clock.h).
struct RecordingCost {
  double step_wall_seconds = 0.0;             // the recorded run's median step
  double calibrated_step_wall_seconds = 0.0;  // with recording off
  std::int64_t calibration_steps = 0;         // the steps that median is of
  // step / calibrated - 1: what recording added to a step (below 0 within the noise).
  double fraction() const { return step_wall_seconds / calibrated_step_wall_seconds - 1.0; }
  friend bool operator==(const RecordingCost&, const RecordingCost&) = default;
};

// How a run's training steps were launched on its device, where the run asked for CUDA graphs
// (run --cuda-graphs on): eager (op by op), captured into a graph, or replayed from it; and the
// eager steps by reason ("CUDA graphs off", "batch of 96 instead of 128 ...", "capture failed:
// ..."). The three counts add up to the run's steps (those after its last resume, for a run that
// was interrupted and resumed).
struct StepLaunchRecord {
  std::int64_t eager = 0, capture = 0, replay = 0;
  std::map<std::string, std::int64_t> eager_reasons;  // their counts add up to `eager`
  // Several runs' launches summed (the report's).
  StepLaunchRecord& operator+=(const StepLaunchRecord& other) {
    eager += other.eager;
    capture += other.capture;
    replay += other.replay;
    for (const auto& [reason, count] : other.eager_reasons) eager_reasons[reason] += count;
    return *this;
  }
  friend bool operator==(const StepLaunchRecord&, const StepLaunchRecord&) = default;
};

struct FinalRecord {
  RunStatus status = RunStatus::completed;
  std::string error;  // failed: what ended the run, the exception's type ("ZeroDivisionError")
  std::int64_t steps = 0;
  std::uint32_t final_loss_bits = 0;
  std::optional<double> eval_loss, eval_accuracy;
  double median_step_seconds = 0.0;
  double total_seconds = 0.0;
  double recording_seconds = 0.0;  // time the recorder spent digesting (its cost to the run)
  std::optional<RecordingCost> recording_cost;   // none in traces of PyTorch scripts, older traces
  std::vector<Digest128> weights;                // final parameters
  std::vector<Digest128> buffers;                // final buffers (version 3)
  std::vector<LoaderWorker> loader_workers;      // in start order; empty but for PyTorch traces
  std::optional<PredictionsRecord> predictions;  // none without an eval set (or older traces)
  std::optional<StepLaunchRecord> step_launch;   // only where the run asked for CUDA graphs
};

struct Trace {
  TraceHeader header;
  std::vector<Digest128> initial_weights;  // before step 0
  std::vector<Digest128> initial_buffers;  // before step 0 (version 3)
  std::vector<StepRecord> steps;
  std::vector<EpochRecord> epochs;
  std::optional<FinalRecord> final;        // absent = the run did not finish
  std::vector<ResumePoint> resume_points;  // in step order (docs/resume.md); none in most traces
  std::string source;                      // file it was read from ("" when in memory)
  // The steps were read and checked, and left in `source` (read_trace_summary): a comparison
  // walks them from there, a step of every run at a time. `steps` then holds none.
  bool steps_in_source = false;
  // The run ended with an exception (its end record says so): never compared as whole.
  bool failed() const { return final && final->status == RunStatus::failed; }
};

// "failed (ZeroDivisionError) after 3 steps": how a failed run ended, for messages.
std::string describe_failure(const FinalRecord& final);

}  // namespace ra::trace
