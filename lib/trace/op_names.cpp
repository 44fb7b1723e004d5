#include "trace/op_names.h"

#include <map>
#include <vector>

namespace ra::audit {
namespace {

struct Names {
  std::vector<const char*> in, out;
};

// Optional inputs (a bias, a relu gate, optimizer state) are recorded only when present, so the
// positions after them shift; they come last in every op that has them.
const std::map<std::string, Names>& table() {
  static const std::map<std::string, Names> names{
      {"batch", {{}, {"sample indices", "images", "labels"}}},
      {"conv2d.forward", {{"x", "weight", "bias"}, {"y"}}},
      {"conv2d.backward_data", {{"dy", "weight", "relu gate"}, {"dx"}}},
      {"conv2d.backward_filter", {{"x", "dy"}, {"dw"}}},
      {"conv2d.backward_bias", {{"dy"}, {"db"}}},
      {"dense.forward", {{"x", "weight", "bias"}, {"y"}}},
      {"dense.backward_data", {{"dy", "weight"}, {"dx"}}},
      {"dense.backward_weight", {{"x", "dy"}, {"dw"}}},
      {"dense.backward_bias", {{"dy"}, {"db"}}},
      {"maxpool2d.forward", {{"x"}, {"y", "argmax"}}},
      {"maxpool2d.backward", {{"dy", "argmax", "relu gate"}, {"dx"}}},
      {"activation.forward", {{"x"}, {"y"}}},
      {"activation.backward", {{"y", "dy"}, {"dx"}}},
      {"dropout_mask", {{"stream (key, step, rate, count)"}, {"mask"}}},
      {"dropout.forward", {{"x", "mask"}, {"y"}}},
      {"dropout.backward", {{"mask", "dy"}, {"dx"}}},
      {"optimizer.update",
       {{"value", "gradient", "state 0", "state 1"}, {"value", "state 0", "state 1"}}},
      {"softmax_cross_entropy", {{"logits", "labels"}, {"loss value", "dlogits"}}},
      {"mean_squared_error", {{"prediction", "labels"}, {"loss value", "dprediction"}}},
  };
  return names;
}

std::string name_at(const std::string& op, std::size_t index, bool input) {
  const auto it = table().find(op);
  if (it != table().end()) {
    const std::vector<const char*>& list = input ? it->second.in : it->second.out;
    if (index < list.size()) return list[index];
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

}  // namespace ra::audit
