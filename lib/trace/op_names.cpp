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

std::string ledger_direction(const std::string& op) {
  if (op == "softmax_cross_entropy" || op == "mean_squared_error") return "batch_sum";
  const auto dot = op.find('.');
  return dot == std::string::npos ? std::string() : op.substr(dot + 1);
}

}  // namespace ra::audit
