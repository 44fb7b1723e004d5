#pragma once
// What one probe of a batch-invariance sweep records (trace/invariance.h, docs/invariance.md): a
// decorator of the backend that, for each op of one forward pass, in execution order, keeps the
// op, its layer and the digests of the anchor's row of its inputs (before the op: activations
// run in place) and of its first output; a buffer with no batch dimension (a parameter) is
// digested whole. Each row is digested as a flat [elements per row] region (core/digest.h), as
// op records digest their regions, by the backend (Ops::digest_regions: on the device for the
// CUDA backend, so only 16 bytes per row cross to the host).
//
// The control (InvarianceControl): asked for, it changes the anchor's row of the first
// order-dependent op's output (a conv2d or dense forward product: a sum whose order a kernel
// chooses) by one ULP, right after the op and before its output is digested, so that the records
// show that op's inputs equal and its output different, as a batch-dependent kernel would. Only
// when the batch holds other samples: a batch of one is every sweep's reference. The change is
// one ULP on every element of the row, as the PyTorch recorder makes it (docs/invariance.md, "The
// control"): std::nextafter toward +infinity, +infinity toward zero, NaN left; so that it
// reaches the model's output as a batch-dependent kernel's rounding would. One element alone need
// not: in the Keras convnet, one ULP on the first element of the first conv's row was lost in the
// second conv, its max-pool and relu (measured: the output's bits unchanged), and a control that
// the output cannot show proves nothing about the output.
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "backend/forwarding_ops.h"
#include "record/announced_layer.h"
#include "trace/invariance.h"

namespace ra::record {

class InvarianceRecorder final : public backend::ForwardingOps {
 public:
  // `whole`: the buffers that have no batch dimension (the model's parameters), digested whole.
  InvarianceRecorder(backend::Ops& inner, std::unordered_set<const void*> whole);

  // Starts a forward pass over `batch` rows with the anchor at `anchor_row`; `control`: inject
  // the control's change (above) in this pass. InputError for a row outside the batch.
  void begin_pass(int batch, int anchor_row, bool control);
  // The pass's ops, in execution order.
  std::vector<trace::InvarianceOp> take_ops();
  // The index (into the pass's ops) of the op whose output the control changed; none when the
  // pass injected nothing (no control asked, a batch of one, or no order-dependent op).
  std::optional<int> control_op() const noexcept { return control_op_; }

  void enter_layer(const std::string& name) override;

 private:
  void observe(const backend::OpCall& call) override;
  trace::RowDigest row_digest(const backend::OpRegion& region);
  // The control's one-ULP change of the anchor's row of `output`.
  void change_anchor_row(const backend::OpRegion& output);

  std::unordered_set<const void*> whole_;
  AnnouncedLayer layer_;
  int batch_ = 1, anchor_row_ = 0;
  bool control_ = false;
  std::optional<int> control_op_;
  std::vector<trace::InvarianceOp> ops_;
};

}  // namespace ra::record
