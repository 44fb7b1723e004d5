#include "record/op_recorder.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

#include "core/error.h"
#include "core/op_table.h"
#include "trace/op_names.h"

namespace ra::record {
namespace {

using backend::KernelMode;
using Region = OpRecorder::Region;

// Whether two regions share a byte.
bool overlap(const Region& a, const Region& b) {
  if (a.host != b.host) return false;
  const auto* a0 = static_cast<const unsigned char*>(a.data);
  const auto* b0 = static_cast<const unsigned char*>(b.data);
  return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

// The output an op fault flips: the first in backend memory (a loss's gradient, not its value).
std::size_t fault_output(const std::vector<Region>& outputs) {
  std::size_t i = 0;
  while (i < outputs.size() && outputs[i].host) ++i;
  return i;
}

}  // namespace

OpRecorder::OpRecorder(backend::Ops& inner, int digest_threads, std::optional<OpFault> fault)
    : ForwardingOps(inner), pool_(std::max(1, digest_threads)), fault_(std::move(fault)) {}

void OpRecorder::begin_step(std::int64_t step, bool record) {
  // An unfinished step's queue (its records were never taken) is emptied unread.
  if (queued_ > 0) static_cast<void>(ForwardingOps::take_queued_digests());
  queued_ = 0;
  step_ = step;
  recording_ = record;
  records_.clear();
  cache_.clear();
  queue_digests_ = record && !hook_ && !memory().host_accessible() && inner().queues_digests();
}

std::vector<trace::OpRecord> OpRecorder::take_records() {
  recording_ = false;
  resolve_queued();
  return std::move(records_);
}

void OpRecorder::enter_layer(const std::string& name) {
  layer_.enter(name);
  ForwardingOps::enter_layer(name);
}

void OpRecorder::record_batch(const data::Batch& batch) {
  if (!recording_) return;
  const auto start = std::chrono::steady_clock::now();
  trace::OpRecord r;
  r.op = "batch";
  // The batch is assembled on the host whatever the backend: hashed here, not through memory().
  r.out = {ra::digest(std::span<const std::int64_t>(batch.sample_indices)),
           digest_bytes(DType::f32, Shape{static_cast<std::int64_t>(batch.images.size())},
                        batch.images.data(), batch.images.bytes()),
           ra::digest(std::span<const std::int32_t>(batch.labels))};
  records_.push_back(std::move(r));
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<unsigned char> OpRecorder::read(const Region& region) {
  std::vector<unsigned char> bytes(region.bytes());
  if (region.host) {
    std::memcpy(bytes.data(), region.data, bytes.size());
  } else {
    memory().download(bytes.data(), region.data, bytes.size());
  }
  return bytes;
}

void OpRecorder::write(const Region& region, const std::vector<unsigned char>& bytes) {
  void* target = const_cast<void*>(region.data);
  if (region.host) {
    std::memcpy(target, bytes.data(), bytes.size());
  } else {
    memory().upload(target, bytes.data(), bytes.size());
  }
}

void OpRecorder::record(std::string_view op, const char* mode, std::string ledger_key,
                        const std::vector<Region>& inputs, const std::vector<Region>& outputs,
                        const backend::OpRun& compute) {
  Open call = open(op, mode, std::move(ledger_key), inputs);
  if (hook_) {
    run_hook(call, inputs, outputs, compute);
  } else {
    compute();
  }
  close(call, outputs);
}

void OpRecorder::run_hook(const Open& call, const std::vector<Region>& inputs,
                          const std::vector<Region>& outputs, const backend::OpRun& compute) {
  // The inputs an output overlaps (an activation or an update in place) are kept, so that every
  // execution starts from the same inputs; the others are only read.
  std::vector<std::pair<Region, std::vector<unsigned char>>> kept;
  for (const Region& in : inputs) {
    const bool overwritten = std::any_of(outputs.begin(), outputs.end(),
                                         [&](const Region& out) { return overlap(in, out); });
    if (overwritten) kept.emplace_back(in, read(in));
  }
  bool first = true;
  Call c;
  c.step = step_;
  c.index = records_.size();
  c.opened = &call.record;
  c.outputs = outputs;
  c.fault_output = fault_output(outputs);
  c.execute = [&] {
    if (!first) {
      for (const auto& [region, bytes] : kept) write(region, bytes);
    }
    first = false;
    compute();
  };
  hook_(c);
}

OpRecorder::Open OpRecorder::open(std::string_view op, const char* mode, std::string ledger_key,
                                  const std::vector<Region>& inputs) {
  Open call;
  call.started = std::chrono::steady_clock::now();
  call.record.op = op;
  call.record.layer = records_layer(op);
  call.record.mode = mode;
  call.record.ledger_key = std::move(ledger_key);
  call.record.in = digest_regions(inputs);
  seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - call.started).count();
  return call;
}

void OpRecorder::close(Open& call, const std::vector<Region>& outputs) {
  const std::size_t target = fault_output(outputs);
  if (target < outputs.size()) apply_fault(call.record.op, outputs[target]);
  const auto start = std::chrono::steady_clock::now();
  // The op wrote its outputs: their old digests (if any) are stale.
  for (const Region& r : outputs) {
    if (!r.host) cache_.erase(r.data);
  }
  call.record.out = digest_regions(outputs);
  name_algorithm(call.record);
  // A nondeterministic mode, or an algorithm that is not deterministic whatever the mode asked
  // (autotune may choose one): its outcome may not come back in a replay, so it is kept.
  const bool may_vary = call.record.mode == to_string(KernelMode::nondeterministic) ||
                        call.record.algorithm_deterministic == false;
  if (kept_ != nullptr && may_vary) {
    KeptOutputs::Outputs kept;
    for (const Region& r : outputs) {
      kept.bytes.push_back(read(r));
      kept.dtypes.push_back(r.dtype);
    }
    if (!kept_->keep(run_, step_, records_.size(), std::move(kept))) kept_ = nullptr;
  }
  records_.push_back(std::move(call.record));
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void OpRecorder::name_algorithm(trace::OpRecord& record) const {
  if (record.ledger_key.empty()) return;
  std::optional<KernelMode> mode;
  for (KernelMode m : {KernelMode::deterministic, KernelMode::nondeterministic,
                       KernelMode::autotune, KernelMode::batch_invariant}) {
    if (record.mode == to_string(m)) mode = m;
  }
  const std::optional<backend::AlgorithmUsed> used =
      inner().algorithm_used(record.ledger_key, trace::ledger_direction(record.op), mode);
  if (!used) return;
  record.algorithm = used->name;
  record.algorithm_deterministic = used->deterministic;
}

void OpRecorder::apply_fault(const std::string& op, const Region& output) {
  if (!fault_ || fault_applied_ || fault_->step != step_ || fault_->op != op ||
      fault_->layer != records_layer(op)) {
    return;
  }
  if (output.dtype != DType::f32) {
    throw InputError("--inject-fault: " + op + " has no float output to flip a bit of");
  }
  if (fault_->element >= output.count) {
    throw InputError("--inject-fault: element " + std::to_string(fault_->element) +
                     " is outside the output of " + op + " in " + records_layer(op) + " (" +
                     std::to_string(output.count) + " elements)");
  }
  // Through memory(): the output may be in device memory.
  auto* target = static_cast<float*>(const_cast<void*>(output.data)) + fault_->element;
  std::uint32_t bits = 0;
  memory().download(&bits, target, sizeof bits);
  bits ^= std::uint32_t(1) << fault_->bit;
  memory().upload(target, &bits, sizeof bits);
  fault_applied_ = true;
}

void OpRecorder::observe(const backend::OpCall& call) {
  if (!recording_ || call.op.trace_name.empty()) return call.run();
  // Not fused while recording: the update's outputs are digested as every op's are (and an op
  // fault may change them after the update), and the recorder digests the step's tensors itself.
  if (call.declinable) return;
  if (call.op.id == OpId::dropout_forward) return record_dropout(call);
  record(call.op.trace_name, call.mode ? to_string(*call.mode) : "", backend::ledger_key(call),
         std::vector<Region>(call.inputs.begin(), call.inputs.end()),
         std::vector<Region>(call.outputs.begin(), call.outputs.end()), call.run);
}

void OpRecorder::record_dropout(const backend::OpCall& call) {
  // The mask is a pseudo-op of its own: a function of (key, draw, threshold, count) only, so a
  // mask that differs while these match is the random stream's fault, not the dropout's. Two
  // records from one call: not shown to a replay hook (the op is deterministic by construction).
  const Region& x = call.inputs[0];
  const Region& mask = call.inputs[1];
  Open mask_call = open(op_info(OpId::dropout_mask).trace_name, "", "", {});
  mask_call.record.in = {ra::digest(std::span<const std::int64_t>(
      reinterpret_cast<const std::int64_t*>(call.stream.data()), call.stream.size()))};
  Open dropout = open(call.op.trace_name, "", "", {x});
  call.run();
  close(mask_call, {mask});
  dropout.record.in.push_back(digest_regions({mask})[0]);
  close(dropout, std::vector<Region>(call.outputs.begin(), call.outputs.end()));
}

}  // namespace ra::record
