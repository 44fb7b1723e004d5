// The op table: every op of backend/ops.h (docs/ops.md lists where each lives), from the families
// in *_cases.cpp. Adding an op: a family function appending its cases, called here.
#include "ops/case_support.h"

namespace ops_test {

const std::vector<OpCase>& op_table() {
  static const std::vector<OpCase> table = [] {
    std::vector<OpCase> t;
    add_conv_cases(t);
    add_conv_pool_cases(t);
    add_dense_cases(t);
    add_pool_cases(t);
    add_channel_cases(t);
    add_elementwise_cases(t);
    add_loss_cases(t);
    add_optimizer_cases(t);
    add_digest_cases(t);
    return t;
  }();
  return table;
}

}  // namespace ops_test
