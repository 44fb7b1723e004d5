// ForwardingOps turns every op of backend::Ops into one call of its hook, described by the op's
// row of the op table (core/op_table.h): a kernel mode exactly when the row reduces, the buffers
// at the positions the row names, and every row that bench times reached by an Ops method. So the
// table cannot drift from the interface the recorder and the timer observe through it.
#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/forwarding_ops.h"
#include "core/op_table.h"

namespace {

using namespace ra::backend;
using ra::OpId;
using ra::OpInfo;

struct Seen {
  const OpInfo* op;
  std::optional<KernelMode> mode;
  std::size_t inputs, outputs;
  bool declinable;
};

// Notes each call and does not run it: the buffers below are one-element stand-ins.
class CallSpy final : public ForwardingOps {
 public:
  CallSpy(Ops& inner, bool composites_whole) : ForwardingOps(inner) {
    observe_composites_whole(composites_whole);
  }
  std::vector<Seen> seen;
  std::vector<const OpInfo*> ops() const {
    std::vector<const OpInfo*> out;
    for (const Seen& s : seen) out.push_back(s.op);
    return out;
  }

 private:
  void observe(const OpCall& call) override {
    seen.push_back({&call.op, call.mode, call.inputs.size(), call.outputs.size(), call.declinable});
  }
};

template <std::size_t N>
std::size_t named(const std::array<std::string_view, N>& names) {
  std::size_t count = 0;
  for (std::string_view name : names) count += name.empty() ? 0 : 1;
  return count;
}

struct StandIns {
  float f[1] = {};
  std::int32_t i[1] = {};
  std::uint8_t m[1] = {};
  ConvGeometry conv{};
  PoolGeometry pool{};
  DenseGeometry dense{};
  ra::optim::UpdateRule rule{};
  ra::optim::ChunkDigestTargets targets{};
  MaxPoolGradient pooled{f, i, f};
};

// Every op of Ops, once, with every optional buffer present.
void call_every_op(Ops& ops, StandIns& s) {
  const KernelMode det = KernelMode::deterministic, nondet = KernelMode::nondeterministic;
  float* f = s.f;
  ops.conv2d_forward(s.conv, f, f, f, Activation::relu, f);
  ops.conv2d_forward_maxpool(s.conv, f, f, f, Activation::relu, s.pool, f, f, s.i);
  ops.conv2d_backward_data(s.conv, f, f, f, f, nondet);
  ops.conv2d_backward_filter(s.conv, f, f, f, det);
  ops.conv2d_backward_bias(s.conv, f, f, det);
  ops.conv2d_backward_filter_bias(s.conv, f, f, f, f, nondet, det);
  ops.conv2d_backward_maxpool(s.conv, s.pool, s.pooled, f, f, f, f, f, f, f, {});
  ops.dense_forward(s.dense, f, f, f, Activation::none, f);
  ops.dense_backward_data(s.dense, f, f, f, det);
  ops.dense_backward_weight(s.dense, f, f, f, det);
  ops.dense_backward_bias(s.dense, f, f, det);
  ops.maxpool2d_forward(s.pool, f, f, s.i);
  ops.maxpool2d_backward(s.pool, f, s.i, f, f, det);
  ops.activation_forward(Activation::relu, 1, f, f);
  ops.activation_backward(Activation::relu, 1, f, f, f);
  ops.dropout_forward(1, 0, 1.0f, {}, 0, f, f, s.m);
  ops.dropout_backward(1, 1.0f, s.m, f, f);
  ops.softmax_cross_entropy(1, 1, f, s.i, f, det);
  ops.mean_squared_error(1, 1, f, s.i, f, det);
  ops.optimizer_update(s.rule, 1, f, f, f, f);
  ops.optimizer_update_digested(s.rule, 1, f, f, f, f, s.targets);
  ops.digest({});
  const ChannelGeometry channels{};
  ops.batchnorm_forward_training(channels, f, f, f, 0.1f, 1e-5f, f, f, f, f, f, det);
  ops.batchnorm_forward_training_activation(channels, f, f, f, 0.1f, 1e-5f, f, f, f, f,
                                            Activation::relu, f, f, nondet);
  ops.batchnorm_forward_inference(channels, f, f, f, f, f, 1e-5f, f);
  ops.batchnorm_backward(channels, f, f, f, f, f, f, f, f, nondet);
  ops.batchnorm_backward_add(channels, f, f, f, f, f, f, f, f, f, det);
  ops.global_avgpool_forward(channels, f, f);
  ops.global_avgpool_backward(channels, f, f);
  ops.residual_add(1, f, f, f);
}

}  // namespace

TEST_CASE("every op reaches the hook as its row of the op table says", "[backend][ops]") {
  cpu::CpuOps cpu(1);
  CallSpy spy(cpu, true);
  StandIns stand_ins;
  call_every_op(spy, stand_ins);
  REQUIRE(spy.seen.size() == 30);
  std::set<const OpInfo*> reached;
  for (const Seen& s : spy.seen) {
    INFO(s.op->timing_label);
    CHECK(s.mode.has_value() == s.op->reduces);
    CHECK(s.inputs == named(s.op->inputs));
    CHECK(s.outputs == named(s.op->outputs));
    CHECK(s.declinable == (&s == &spy.seen[20]));  // optimizer_update_digested alone
    reached.insert(s.op);
  }
  CHECK(spy.seen[20].op == &ra::op_info(OpId::optimizer_update));
  for (const OpInfo& row : ra::kOpTable) {
    INFO(row.trace_name << " " << row.timing_label);
    CHECK(reached.count(&row) == (row.timing_label.empty() ? 0u : 1u));
  }
}

TEST_CASE("composites reach the hook as their parts unless asked for whole", "[backend][ops]") {
  cpu::CpuOps cpu(1);
  StandIns s;
  const auto row = [](OpId id) { return &ra::op_info(id); };
  CallSpy parts(cpu, false);
  parts.conv2d_forward_maxpool(s.conv, s.f, s.f, s.f, Activation::relu, s.pool, s.f, s.f, s.i);
  parts.conv2d_backward_maxpool(s.conv, s.pool, s.pooled, s.f, s.f, s.f, s.f, s.f, s.f, s.f, {});
  const ChannelGeometry channels{};
  parts.batchnorm_forward_training_activation(channels, s.f, s.f, s.f, 0.1f, 1e-5f, s.f, s.f, s.f,
                                              s.f, Activation::relu, s.f, s.f,
                                              KernelMode::deterministic);
  parts.batchnorm_backward_add(channels, s.f, s.f, s.f, s.f, s.f, s.f, s.f, s.f, s.f,
                               KernelMode::deterministic);
  CHECK(parts.ops() == std::vector{row(OpId::conv2d_forward), row(OpId::maxpool2d_forward),
                                   row(OpId::maxpool2d_backward), row(OpId::conv2d_backward_filter),
                                   row(OpId::conv2d_backward_bias), row(OpId::conv2d_backward_data),
                                   row(OpId::batchnorm_forward_training),
                                   row(OpId::activation_forward), row(OpId::batchnorm_backward),
                                   row(OpId::residual_add)});
  CallSpy whole(cpu, true);
  whole.conv2d_forward_maxpool(s.conv, s.f, s.f, s.f, Activation::relu, s.pool, s.f, s.f, s.i);
  ConvPoolBackwardModes modes;
  modes.filter = KernelMode::nondeterministic;
  whole.conv2d_backward_maxpool(s.conv, s.pool, s.pooled, s.f, s.f, s.f, s.f, s.f, s.f, s.f, modes);
  whole.batchnorm_forward_training_activation(channels, s.f, s.f, s.f, 0.1f, 1e-5f, s.f, s.f, s.f,
                                              s.f, Activation::relu, s.f, s.f,
                                              KernelMode::nondeterministic);
  whole.batchnorm_backward_add(channels, s.f, s.f, s.f, s.f, s.f, s.f, s.f, s.f, s.f,
                               KernelMode::deterministic);
  CHECK(whole.ops() == std::vector{row(OpId::conv2d_forward_maxpool),
                                   row(OpId::conv2d_backward_maxpool),
                                   row(OpId::batchnorm_forward_training_activation),
                                   row(OpId::batchnorm_backward_add)});
  CHECK(whole.seen[1].mode == KernelMode::nondeterministic);  // filed under the filter's mode
  CHECK(whole.seen[2].mode == KernelMode::nondeterministic);  // the batchnorm's
}

TEST_CASE("the op table names each op once and finds recorded ops by name", "[backend][ops]") {
  std::set<std::string_view> trace_names, timing_labels;
  for (const OpInfo& row : ra::kOpTable) {
    INFO(row.trace_name << " " << row.timing_label);
    if (!row.trace_name.empty()) {
      CHECK(trace_names.insert(row.trace_name).second);
      CHECK(ra::find_recorded_op(row.trace_name) == &row);
    }
    if (!row.timing_label.empty()) CHECK(timing_labels.insert(row.timing_label).second);
    if (!row.spec_key.empty()) CHECK(row.reduces);
  }
  CHECK(ra::find_recorded_op("") == nullptr);
  CHECK(ra::find_recorded_op("aten::conv2d") == nullptr);
}
