#include "record/invariance_recorder.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/error.h"
#include "core/op_table.h"

namespace ra::record {
namespace {

// The ops that sum a sample's terms in an order their kernel chooses: where a batch-dependent
// kernel would change a sample's bits first, and so where the control changes them.
bool order_dependent(OpId op) {
  return op == OpId::conv2d_forward || op == OpId::dense_forward;
}

}  // namespace

InvarianceRecorder::InvarianceRecorder(backend::Ops& inner, std::unordered_set<const void*> whole)
    : ForwardingOps(inner), whole_(std::move(whole)) {}

void InvarianceRecorder::begin_pass(int batch, int anchor_row, bool control) {
  if (batch < 1 || anchor_row < 0 || anchor_row >= batch) {
    throw InputError("invariance sweep: anchor row " + std::to_string(anchor_row) +
                     " is outside a batch of " + std::to_string(batch));
  }
  batch_ = batch;
  anchor_row_ = anchor_row;
  control_ = control;
  control_op_.reset();
  ops_.clear();
}

std::vector<trace::InvarianceOp> InvarianceRecorder::take_ops() {
  return std::move(ops_);
}

void InvarianceRecorder::enter_layer(const std::string& name) {
  layer_.enter(name);
  ForwardingOps::enter_layer(name);
}

trace::RowDigest InvarianceRecorder::row_digest(const backend::OpRegion& region) {
  backend::MemoryRegion row{region.dtype, region.data, region.count};
  const bool whole = whole_.contains(region.data);
  if (!whole) {
    // An activation: [batch, ...] in row-major order, the anchor's row one contiguous block.
    if (region.count % batch_ != 0) {
      throw std::logic_error("invariance recorder: a region of " + std::to_string(region.count) +
                             " elements has no rows of a batch of " + std::to_string(batch_));
    }
    row.count = region.count / batch_;
    row.data = static_cast<const unsigned char*>(region.data) +
               static_cast<std::size_t>(anchor_row_) * static_cast<std::size_t>(row.count) *
                   dtype_bytes(region.dtype);
  }
  return {inner().digest_regions({row}).front(), whole};
}

void InvarianceRecorder::change_anchor_row(const backend::OpRegion& output) {
  const std::int64_t count = output.count / batch_;
  void* row =
      static_cast<unsigned char*>(const_cast<void*>(output.data)) +
      static_cast<std::size_t>(anchor_row_) * static_cast<std::size_t>(count) * sizeof(float);
  std::vector<float> values(static_cast<std::size_t>(count));
  memory().download(values.data(), row, values.size() * sizeof(float));
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  bool changed = false;
  for (float& v : values) {
    if (std::isnan(v)) continue;
    const float next = std::nextafter(v, v == kInfinity ? 0.0f : kInfinity);
    changed = changed || std::memcmp(&next, &v, sizeof v) != 0;
    v = next;
  }
  if (!changed) return;
  memory().upload(row, values.data(), values.size() * sizeof(float));
  control_op_ = static_cast<int>(ops_.size());
}

void InvarianceRecorder::observe(const backend::OpCall& call) {
  // Composites reach this hook as their parts (ForwardingOps); the digests are no computation.
  if (call.op.trace_name.empty()) {
    call.run();
    return;
  }
  trace::InvarianceOp op;
  op.op = call.op.timing_label.empty() ? call.op.trace_name : call.op.timing_label;
  op.module = layer_.of(call.op.trace_name);
  for (const backend::OpRegion& in : call.inputs) {
    if (!in.host) op.inputs.push_back(row_digest(in));
  }
  call.run();
  if (control_ && batch_ > 1 && !control_op_ && order_dependent(call.op.id)) {
    change_anchor_row(call.outputs[0]);
  }
  // A host output first is a loss's value: a mean over the batch, no row of it the anchor's.
  if (call.outputs.size() > 0 && !call.outputs[0].host) op.output = row_digest(call.outputs[0]);
  ops_.push_back(std::move(op));
}

}  // namespace ra::record
