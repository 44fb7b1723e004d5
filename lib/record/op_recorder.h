#pragma once
// The op-level trace (--trace-ops, docs/trace-format.md "Op records"): a decorator of the backend
// that records, for every op execution of a step in the window, the op, its layer, its kernel
// mode, the ledger key of its geometry and the digests of its inputs and outputs, in execution
// order. The Recorder starts each step (begin_step) and moves the step's records into the trace.
//
// Digests are those of core/digest.h over the flat element array of each region (shape [count]),
// computed on the recorder's threads, or for a backend whose memory the host cannot read by the
// backend (Ops::digest_regions: the CUDA backend hashes on the device, one request per op call).
// Within a step each buffer is hashed at most once: an input that an earlier op of the step wrote
// or read reuses that digest (the cache is keyed by address and size, and every write inside a
// recorded step goes through an op, except the copies of flatten, which write buffers no op
// writes). The cache is emptied at every step start, since the loader, the staging upload and the
// update of the step before write outside the window's ops.
//
// On a backend that queues digests (Ops::queues_digests: the CUDA backend), the digests of device
// regions are queued in order with the ops and taken at the step's end: records hold a
// placeholder per queued digest until take_records() resolves them, one wait and one download a
// step. Not with a replay hook, which compares digests as the ops run.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/forwarding_ops.h"
#include "core/thread_pool.h"
#include "data/loader.h"
#include "record/announced_layer.h"
#include "record/kept_outputs.h"
#include "trace/trace.h"

namespace ra::record {

// Test-only (--inject-fault op=LAYER/OP): flips one bit of one element of the first output of the
// first execution of OP in LAYER at `step`, right after the op ran (before its digest).
struct OpFault {
  std::int64_t step = 0;
  std::string layer, op;
  std::int64_t element = 0;
  int bit = 0;
};

class OpRecorder final : public backend::ForwardingOps {
 public:
  OpRecorder(backend::Ops& inner, int digest_threads, std::optional<OpFault> fault = {});

  // Starts step `step`: records its ops when `record`, else forwards them unrecorded.
  void begin_step(std::int64_t step, bool record);
  // The batch assembly of the step, recorded as the pseudo-op "batch" (no inputs; outputs: the
  // sample indices, the images, the labels). Call after begin_step, before the forward pass.
  void record_batch(const data::Batch& batch);
  // The step's records, in execution order; stops recording until the next begin_step (so the
  // evaluation after an epoch's last step is not recorded).
  std::vector<trace::OpRecord> take_records();
  // Seconds spent digesting so far (the recording's cost to the run).
  double recording_seconds() const noexcept { return seconds_; }
  // Whether the fault (if any) was applied; an op fault that never matched an op is an input
  // error the caller reports.
  bool fault_applied() const noexcept { return fault_applied_; }

  void enter_layer(const std::string& name) override;

  // One buffer an op reads or writes (backend/op_call.h): in backend memory, or in host memory
  // when `host` (a loss value, returned to the caller).
  using Region = backend::OpRegion;
  // A host copy of a region's bytes, and a write of them back.
  std::vector<unsigned char> read(const Region& region);
  void write(const Region& region, const std::vector<unsigned char>& bytes);

  // A replay (audit/op_replay.h) takes over the execution of every op it is shown: for each op of
  // a recorded step except the dropout's (elementwise, and deterministic by construction), once
  // its inputs are digested, the hook gets the call and must execute it at least once; the
  // recorder then records what the last execution left in the outputs. The hook may throw to end
  // the run.
  struct Call {
    std::int64_t step = 0;
    std::size_t index = 0;          // the record's position in the step
    const trace::OpRecord* opened;  // op, layer, mode, ledger key and the inputs' digests
    std::vector<Region> outputs;    // in the record's order
    std::size_t fault_output = 0;   // the output an op fault flips (the first in backend memory)
    // Runs the op on its inputs as they were before its first execution (inputs it overwrites,
    // in place, are restored first).
    std::function<void()> execute;
  };
  using ReplayHook = std::function<void(const Call&)>;
  void set_replay_hook(ReplayHook hook) { hook_ = std::move(hook); }

  // Keeps the outputs of every recorded op that ran in nondeterministic mode into `store`, as run
  // `run`, until the run's budget there is spent (record/kept_outputs.h).
  void keep_outputs(KeptOutputs& store, int run) {
    kept_ = &store;
    run_ = run;
  }

 private:
  // An op call being recorded: inputs are digested when it opens (before the op may overwrite
  // them: activations run in place), outputs when it closes.
  struct Open {
    trace::OpRecord record;
    std::chrono::steady_clock::time_point started;
  };
  // Every op call (backend/forwarding_ops.h): forwarded, and recorded when the step is in the
  // window and the op has a record (core/op_table.h).
  void observe(const backend::OpCall& call) override;
  Open open(std::string_view op, const char* mode, std::string ledger_key,
            const std::vector<Region>& inputs);
  void close(Open& call, const std::vector<Region>& outputs);
  // Records one op: open, `compute` (through the replay hook when set), close.
  void record(std::string_view op, const char* mode, std::string ledger_key,
              const std::vector<Region>& inputs, const std::vector<Region>& outputs,
              const backend::OpRun& compute);
  void run_hook(const Open& call, const std::vector<Region>& inputs,
                const std::vector<Region>& outputs, const backend::OpRun& compute);
  // The dropout's call as two records: its mask, then the dropout (op_recorder.cpp).
  void record_dropout(const backend::OpCall& call);

  // The layer an op's record names: the announced one, the pool's for a conv + pool pair.
  const std::string& records_layer(std::string_view op) const { return layer_.of(op); }
  std::vector<Digest128> digest_regions(const std::vector<Region>& regions);
  void apply_fault(const std::string& op, const Region& output);
  // The algorithm the backend says the call ran (a record with a ledger key), into the record.
  void name_algorithm(trace::OpRecord& record) const;

  ThreadPool pool_;
  std::optional<OpFault> fault_;
  ReplayHook hook_;
  KeptOutputs* kept_ = nullptr;
  int run_ = 0;
  bool fault_applied_ = false;
  bool recording_ = false;
  std::int64_t step_ = 0;
  AnnouncedLayer layer_;  // the announced layer (Ops::enter_layer)
  std::vector<trace::OpRecord> records_;
  // Digest of each buffer hashed or written so far in this step, by address.
  struct Cached {
    DType dtype;
    std::int64_t count;
    Digest128 digest;
  };
  std::unordered_map<const void*, Cached> cache_;
  // Queued digests (see the top): whether this step queues, and how many it queued.
  bool queue_digests_ = false;
  std::size_t queued_ = 0;
  // The step's records with every queued digest in place.
  void resolve_queued();
  double seconds_ = 0.0;
};

}  // namespace ra::record
