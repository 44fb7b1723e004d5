#pragma once
// The names of the inputs and outputs of each recorded op, in the order of its record's digests,
// for reports: those of its row of the op table (core/op_table.h; the op recorder writes the
// digests in that order, docs/trace-format.md lists them).
#include <cstddef>
#include <string>

#include "trace/trace.h"

namespace ra::trace {

// "weight", "dy", ...; "input 3" for a position the op does not have (a newer writer).
std::string op_input_name(const std::string& op, std::size_t index);
std::string op_output_name(const std::string& op, std::size_t index);
// The same for a record, whose types name the positions of a PyTorch op: "input 0 (f32[64,10])",
// "the non-tensor arguments", "the generator state", "the result".
std::string op_input_name(const OpRecord& record, std::size_t index);
std::string op_output_name(const OpRecord& record, std::size_t index);

// The direction of an op as the algorithm ledger names it: the part of "conv2d.backward_filter"
// after the dot ("forward", "backward_filter", ...); a loss's batch sum is "batch_sum"; "" for an
// op without one ("batch", "dropout_mask").
std::string ledger_direction(const std::string& op);

}  // namespace ra::trace
