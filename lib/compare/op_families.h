#pragma once
// The engine's ops against PyTorch's (`compare A B --align` of an engine trace and a PyTorch one;
// docs/equivalence.md, "The engine against PyTorch"). The two programs record one step in other
// words: the engine fuses what PyTorch runs as several aten ops (a conv, its bias and its relu are
// one conv2d.forward; a relu's backward goes into the next conv's or pool's backward) and splits
// what PyTorch runs as one (aten.convolution_backward is the engine's backward_filter,
// backward_bias and backward_data); it names an op by its family ("dense.forward"), PyTorch by its
// kernel ("aten.addmm.default"), and reads a weight where PyTorch reads its transpose.
//
// So before two such steps are aligned (compare/op_alignment.h), each is read as a sequence of
// engine ops, a StepView: PyTorch's records grouped, by the table of op families (op_families()),
// into runs that each compute the value of one engine op, named and wired as the engine's; the
// engine's records with only the inputs and outputs both programs have (the engine's int32
// labels and argmax are no PyTorch int64 tensor). What is compared of a fused run is its end: the
// value of its last op, against the engine op's output. Layers pair up by name: the PyTorch run
// records its modules under the engine's layer names (repro_audit.record(..., layers=...)).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace ra::compare {

// One family: an engine op, the PyTorch ops that compute its value, and which of the engine
// record's inputs and outputs both programs have (positions in the engine's record,
// docs/trace-format.md "Op records"; an optional input the record lacks is skipped).
struct OpFamily {
  std::string_view engine_op;    // "conv2d.forward"
  std::string_view pytorch_ops;  // in words: "convolution, then the activation reading it"
  std::vector<std::size_t> inputs, outputs;
  std::size_t rank = 0;  // a layer's backward ops in the engine's order (0: not a backward op)
};

// The table, in the order docs/equivalence.md lists it.
const std::vector<OpFamily>& op_families();
// The family of an engine op, or nullptr.
const OpFamily* family_of(std::string_view engine_op);

// "aten.relu_.default" -> "relu": the aten op's name without namespace, overload and the trailing
// underscore of an in-place variant; an op that is no aten op, as it is.
std::string_view aten_base_name(std::string_view op);

// One op of a view and the records of the step it is read from.
struct ViewedOp {
  std::vector<std::size_t> records;  // the step's records, in order (several: a fused run)
  std::size_t outputs_of = 0;        // the record whose outputs the op's are
  std::vector<std::size_t> outputs;  // their positions there, in the op's order
};

// A step's records as the alignment reads them.
struct StepView {
  std::vector<trace::OpRecord> ops;
  std::vector<ViewedOp> sources;  // one per op
  std::size_t fused = 0;          // ops read from a run of several records
  std::size_t left_out = 0;       // records that only pass a value on (a view, a detach): none
};

// The engine's records, each with the positions its family compares; a softmax_cross_entropy is
// two ops, its loss and its gradient ("softmax_cross_entropy.gradient", which PyTorch computes in
// the backward pass). Records of no family as they are.
StepView engine_view(const std::vector<trace::OpRecord>& records);
// PyTorch's records read as the engine's ops. `engine` is the engine's records of the same step:
// whether the engine applied a relu's backward inside the next layer's backward (the gate input
// of its conv2d.backward_data and maxpool2d.backward) decides whether PyTorch's threshold_backward
// is read into that op or as an activation.backward of its own. Records no family takes stay as
// they are, but for those whose outputs are one of their inputs (detach, view: left out).
StepView pytorch_view(const std::vector<trace::OpRecord>& records,
                      const std::vector<trace::OpRecord>& engine);

// The layers of the engine's records of a family (its model layers, not the loss) that no record
// of `pytorch` names, in order of first appearance: empty when every one pairs up.
std::vector<std::string> engine_layers_missing(const std::vector<trace::OpRecord>& engine,
                                               const std::vector<trace::OpRecord>& pytorch);

}  // namespace ra::compare
