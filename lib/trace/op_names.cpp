#include "trace/op_names.h"

#include <span>
#include <string_view>
#include <vector>

#include "core/op_table.h"

namespace ra::trace {
namespace {

std::string name_at(const std::string& op, std::size_t index, bool input) {
  // Optional inputs (a bias, a relu gate, optimizer state) are recorded only when present, so the
  // positions after them shift; they come last in every op that has them (core/op_table.h).
  if (const OpInfo* row = find_recorded_op(op)) {
    const auto& names = input ? std::span<const std::string_view>(row->inputs)
                              : std::span<const std::string_view>(row->outputs);
    if (index < names.size() && !names[index].empty()) return std::string(names[index]);
  }
  return std::string(input ? "input " : "output ") + std::to_string(index);
}

}  // namespace

std::string op_input_name(const std::string& op, std::size_t index) {
  return name_at(op, index, true);
}

std::string op_output_name(const std::string& op, std::size_t index) {
  return name_at(op, index, false);
}

namespace {

// A position named by its type (trace.h OpRecord::in_types), or "" when the record has none.
std::string typed_name(const std::vector<std::string>& types, std::size_t index, bool input) {
  if (index >= types.size()) return "";
  const std::string& type = types[index];
  if (type == "args") return "the non-tensor arguments";
  if (type == "generator") return "the generator state";
  if (type == "value") return "the result";
  return std::string(input ? "input " : "output ") + std::to_string(index) + " (" + type + ")";
}

}  // namespace

std::string op_input_name(const OpRecord& record, std::size_t index) {
  const std::string typed = typed_name(record.in_types, index, true);
  return typed.empty() ? op_input_name(record.op, index) : typed;
}

std::string op_output_name(const OpRecord& record, std::size_t index) {
  const std::string typed = typed_name(record.out_types, index, false);
  return typed.empty() ? op_output_name(record.op, index) : typed;
}

std::string ledger_direction(const std::string& op) {
  if (op == "softmax_cross_entropy" || op == "mean_squared_error") return "batch_sum";
  const auto dot = op.find('.');
  return dot == std::string::npos ? std::string() : op.substr(dot + 1);
}

}  // namespace ra::trace
