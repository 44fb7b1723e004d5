// The engine's ops against PyTorch's (compare/op_families.h): PyTorch's records of a step, made in
// memory as Debian's torch 1.13 records them (tests/python/test_engine_align.py runs the real
// ones), read as the engine's ops: a conv and its relu as one conv2d.forward compared at the relu's
// output, a dense layer's weight read through t, convolution_backward as three engine ops with the
// previous relu's backward inside backward_data exactly where the engine's record has the gate, a
// dense layer's backward in the engine's order, an optimizer's update of a zero bias whose state is
// as zero as it; the engine's records with only what both programs have; and the alignment of the
// two views, which parts where a value differs and not where only PyTorch's intermediate does.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/op_alignment.h"
#include "compare/op_families.h"
#include "compare/program_alignment.h"
#include "core/error.h"

using Catch::Matchers::Contains;

namespace {

using ra::Digest128;
using ra::compare::align_ops;
using ra::compare::engine_view;
using ra::compare::OpParting;
using ra::compare::pytorch_view;
using ra::compare::StepView;
using ra::trace::OpRecord;

Digest128 v(std::uint64_t n) {
  return Digest128{n, 0xfa41};
}

// A PyTorch record: its tensors' digests with their types, then the call's non-tensor arguments
// as one more input (type "args"), as the recorder writes them.
OpRecord aten(const std::string& layer, const std::string& op,
              std::vector<std::pair<std::uint64_t, std::string>> in,
              std::vector<std::pair<std::uint64_t, std::string>> out, bool args = true) {
  OpRecord r{"aten." + op, layer, "", "", {}, {}};
  for (const auto& [d, type] : in) {
    r.in.push_back(v(d));
    r.in_types.push_back(type);
  }
  if (args) {
    r.in.push_back(v(999));
    r.in_types.push_back("args");
  }
  for (const auto& [d, type] : out) {
    r.out.push_back(v(d));
    r.out_types.push_back(type);
  }
  return r;
}

OpRecord engine(const std::string& layer, const std::string& op, std::vector<std::uint64_t> in,
                std::vector<std::uint64_t> out) {
  OpRecord r{op, layer, "deterministic", "", {}, {}};
  for (std::uint64_t d : in) r.in.push_back(v(d));
  for (std::uint64_t d : out) r.out.push_back(v(d));
  return r;
}

const std::string kX = "f32[8,1,6,6]", kW = "f32[4,1,3,3]", kB = "f32[4]", kY = "f32[8,4,4,4]";

std::vector<OpRecord> torch_conv(std::uint64_t relu_out) {
  return {aten("conv2d_0", "convolution.default", {{1, kX}, {2, kW}, {3, kB}}, {{4, kY}}),
          aten("conv2d_0", "relu.default", {{4, kY}}, {{relu_out, kY}}, false),
          aten("conv2d_0", "detach.default", {{relu_out, kY}}, {{relu_out, kY}}, false)};
}

}  // namespace

TEST_CASE("aten op names reduce to their base: no namespace, overload or in-place underscore") {
  CHECK(ra::compare::aten_base_name("aten.relu_.default") == "relu");
  CHECK(ra::compare::aten_base_name("aten.convolution.default") == "convolution");
  CHECK(ra::compare::aten_base_name("aten._log_softmax.default") == "_log_softmax");
  CHECK(ra::compare::aten_base_name("aten.__and__.Tensor") == "__and__");
  CHECK(ra::compare::aten_base_name("conv2d.forward") == "conv2d.forward");
}

TEST_CASE("the table names each engine op's family once, with the positions both programs have") {
  const auto* conv = ra::compare::family_of("conv2d.forward");
  REQUIRE(conv != nullptr);
  CHECK(conv->inputs == std::vector<std::size_t>{0, 1, 2});
  CHECK(conv->outputs == std::vector<std::size_t>{0});
  // The pool's argmax (int32, the engine's own indexing) is no PyTorch index; the loss's labels
  // (int32 in the engine, int64 in PyTorch) never digest alike.
  CHECK(ra::compare::family_of("maxpool2d.forward")->outputs == std::vector<std::size_t>{0});
  CHECK(ra::compare::family_of("softmax_cross_entropy")->inputs == std::vector<std::size_t>{0});
  CHECK(ra::compare::family_of("batch") == nullptr);
  for (const auto& f : ra::compare::op_families()) CHECK(ra::compare::family_of(f.engine_op) == &f);
}

TEST_CASE("PyTorch's conv and relu are one conv2d.forward, compared at the relu's output") {
  const std::vector<OpRecord> eng = {engine("conv2d_0", "conv2d.forward", {1, 2, 3}, {5})};
  const StepView view = pytorch_view(torch_conv(5), eng);
  REQUIRE(view.ops.size() == 1);
  const OpRecord& op = view.ops[0];
  CHECK(op.op == "conv2d.forward");
  CHECK(op.layer == "conv2d_0");
  CHECK(op.in == std::vector<Digest128>{v(1), v(2), v(3)});  // its arguments left out
  CHECK(op.out == std::vector<Digest128>{v(5)});
  CHECK(op.out_types == std::vector<std::string>{kY});
  CHECK(view.sources[0].records == std::vector<std::size_t>{0, 1});
  CHECK(view.sources[0].outputs_of == 1);
  CHECK(view.fused == 1);
  CHECK(view.left_out == 1);  // the detach passes the relu's output on

  // The relu's output is the engine's: they agree, whatever the convolution alone gave
  // (PyTorch's pre-activation value has no engine counterpart).
  const StepView as_engine = engine_view(eng);
  auto aligned = align_ops(0, view.ops, as_engine.ops);
  CHECK(aligned.aligned == 1);
  CHECK_FALSE(aligned.parting);
  // Another relu output: the op parts there, its inputs equal.
  const StepView other = pytorch_view(torch_conv(6), eng);
  aligned = align_ops(0, other.ops, as_engine.ops);
  REQUIRE(aligned.parting);
  CHECK(aligned.parting->kind == OpParting::Kind::op);
  CHECK(aligned.parting->positions == std::vector<std::size_t>{0});
}

TEST_CASE("a dense layer's weight read through t pairs with the engine's weight") {
  const std::vector<OpRecord> torch = {
      aten("dense_0", "t.default", {{20, "f32[10,16]"}}, {{21, "f32[16,10]"}}, false),
      aten("dense_0", "addmm.default", {{22, "f32[10]"}, {23, "f32[8,16]"}, {21, "f32[16,10]"}},
           {{24, "f32[8,10]"}}),
      aten("dense_0", "relu.default", {{24, "f32[8,10]"}}, {{25, "f32[8,10]"}}, false)};
  const std::vector<OpRecord> eng = {engine("dense_0", "dense.forward", {23, 20, 22}, {25})};
  const StepView view = pytorch_view(torch, eng);
  REQUIRE(view.ops.size() == 1);
  CHECK(view.ops[0].op == "dense.forward");
  CHECK(view.ops[0].in == std::vector<Digest128>{v(23), v(20), v(22)});  // x, weight, bias
  CHECK(view.sources[0].records == std::vector<std::size_t>{0, 1, 2});
  const auto aligned = align_ops(0, view.ops, engine_view(eng).ops);
  CHECK(aligned.aligned == 1);
  CHECK_FALSE(aligned.parting);
}

TEST_CASE("the engine's view keeps what both programs have: no argmax, the loss twice") {
  const std::vector<OpRecord> eng = {
      engine("maxpool2d_0", "maxpool2d.forward", {5}, {30, 31}),
      engine("loss", "softmax_cross_entropy", {40, 41}, {42, 43}),
      engine("conv2d_0.bias", "optimizer.update", {3, 50, 51, 52}, {53, 54, 55}),
      engine("", "batch", {}, {60, 1, 61})};
  const StepView view = engine_view(eng);
  REQUIRE(view.ops.size() == 5);
  CHECK(view.ops[0].out == std::vector<Digest128>{v(30)});
  CHECK(view.ops[1].op == "softmax_cross_entropy");
  CHECK(view.ops[1].in == std::vector<Digest128>{v(40)});
  CHECK(view.ops[1].out == std::vector<Digest128>{v(42)});
  CHECK(view.ops[2].op == "softmax_cross_entropy.gradient");
  CHECK(view.ops[2].out == std::vector<Digest128>{v(43)});
  CHECK(view.sources[2].outputs_of == 1);
  CHECK(view.sources[2].outputs == std::vector<std::size_t>{1});  // the record's output 1
  CHECK(view.ops[3].in == std::vector<Digest128>{v(3), v(50)});   // value, gradient
  CHECK(view.ops[3].out == std::vector<Digest128>{v(53)});
  CHECK(view.ops[4] == eng[3]);  // no family: as recorded
}

TEST_CASE("PyTorch's loss and its gradient are the engine's softmax_cross_entropy's two values") {
  const std::vector<OpRecord> torch = {
      aten("loss", "_log_softmax.default", {{40, "f32[8,10]"}}, {{44, "f32[8,10]"}}),
      aten("loss", "detach.default", {{44, "f32[8,10]"}}, {{44, "f32[8,10]"}}, false),
      aten("loss", "nll_loss_forward.default", {{44, "f32[8,10]"}, {45, "i64[8]"}},
           {{42, "f32[]"}, {46, "f32[]"}}),
      aten("autograd", "ones_like.default", {{42, "f32[]"}}, {{47, "f32[]"}}),
      aten("loss", "nll_loss_backward.default",
           {{47, "f32[]"}, {44, "f32[8,10]"}, {45, "i64[8]"}, {46, "f32[]"}}, {{48, "f32[8,10]"}}),
      aten("loss", "_log_softmax_backward_data.default", {{48, "f32[8,10]"}, {44, "f32[8,10]"}},
           {{43, "f32[8,10]"}})};
  const std::vector<OpRecord> eng = {engine("loss", "softmax_cross_entropy", {40, 41}, {42, 43})};
  const StepView view = pytorch_view(torch, eng);
  REQUIRE(view.ops.size() == 3);
  CHECK(view.ops[0].op == "softmax_cross_entropy");
  CHECK(view.ops[1].op == "aten.ones_like.default");  // autograd's seed: PyTorch's alone
  CHECK(view.ops[2].op == "softmax_cross_entropy.gradient");
  CHECK(view.ops[2].in == std::vector<Digest128>{v(40)});  // the logits the log-softmax read
  CHECK(view.sources[2].records == std::vector<std::size_t>{4, 5});
  const auto aligned = align_ops(0, view.ops, engine_view(eng).ops);
  CHECK(aligned.aligned == 2);
  CHECK_FALSE(aligned.parting);
}

TEST_CASE(
    "convolution_backward is three engine ops, the relu's backward where the engine's gate is") {
  const std::vector<OpRecord> torch = {
      aten("conv2d_1", "convolution_backward.default",
           {{70, "f32[8,4,2,2]"}, {5, kY}, {71, "f32[4,4,3,3]"}},
           {{72, kY}, {73, "f32[4,4,3,3]"}, {74, kB}}),
      aten("conv2d_1", "detach.default", {{73, "f32[4,4,3,3]"}}, {{73, "f32[4,4,3,3]"}}, false),
      aten("conv2d_0", "threshold_backward.default", {{72, kY}, {5, kY}}, {{75, kY}})};
  SECTION("the engine applies it in backward_data (its record's gate input)") {
    const std::vector<OpRecord> eng = {
        engine("conv2d_1", "conv2d.backward_filter", {5, 70}, {73}),
        engine("conv2d_1", "conv2d.backward_bias", {70}, {74}),
        engine("conv2d_1", "conv2d.backward_data", {70, 71, 5}, {75})};
    const StepView view = pytorch_view(torch, eng);
    REQUIRE(view.ops.size() == 3);
    CHECK(view.ops[0].op == "conv2d.backward_filter");
    CHECK(view.sources[0].outputs == std::vector<std::size_t>{1});  // dweight, output 1
    CHECK(view.ops[1].op == "conv2d.backward_bias");
    CHECK(view.ops[2].op == "conv2d.backward_data");
    CHECK(view.ops[2].in == std::vector<Digest128>{v(70), v(71), v(5)});
    CHECK(view.sources[2].records == std::vector<std::size_t>{0, 2});
    const auto aligned = align_ops(0, view.ops, engine_view(eng).ops);
    CHECK(aligned.aligned == 3);
    CHECK_FALSE(aligned.parting);
  }
  SECTION("the engine runs it as an activation.backward of the earlier layer") {
    const std::vector<OpRecord> eng = {engine("conv2d_1", "conv2d.backward_filter", {5, 70}, {73}),
                                       engine("conv2d_1", "conv2d.backward_bias", {70}, {74}),
                                       engine("conv2d_1", "conv2d.backward_data", {70, 71}, {72}),
                                       engine("conv2d_0", "activation.backward", {5, 72}, {75})};
    const StepView view = pytorch_view(torch, eng);
    REQUIRE(view.ops.size() == 4);
    CHECK(view.ops[2].out == std::vector<Digest128>{v(72)});
    CHECK(view.ops[3].op == "activation.backward");
    CHECK(view.ops[3].in == std::vector<Digest128>{v(5), v(72)});  // y, dy: the engine's order
    CHECK(align_ops(0, view.ops, engine_view(eng).ops).aligned == 4);
  }
  SECTION("the first layer's has no input gradient: its outputs are told by their types") {
    const std::vector<OpRecord> first = {aten("conv2d_0", "convolution_backward.default",
                                              {{70, kY}, {1, kX}, {2, kW}}, {{76, kW}, {77, kB}})};
    const StepView view = pytorch_view(first, {});
    REQUIRE(view.ops.size() == 2);
    CHECK(view.ops[0].op == "conv2d.backward_filter");
    CHECK(view.ops[0].out == std::vector<Digest128>{v(76)});
    CHECK(view.ops[1].op == "conv2d.backward_bias");
    CHECK(view.ops[1].out == std::vector<Digest128>{v(77)});
  }
}

TEST_CASE("a dense layer's backward is read in the engine's order: weight, bias, then input") {
  const std::string kWt = "f32[16,10]", kWd = "f32[10,16]", kDy = "f32[8,10]";
  const std::vector<OpRecord> torch = {
      aten("dense_1", "t.default", {{20, kWd}}, {{21, kWt}}, false),
      aten("dense_1", "addmm.default", {{22, "f32[10]"}, {23, "f32[8,16]"}, {21, kWt}},
           {{24, kDy}}),
      aten("dense_1", "t.default", {{21, kWt}}, {{20, kWd}}, false),
      aten("dense_1", "mm.default", {{80, kDy}, {20, kWd}}, {{81, "f32[8,16]"}}, false),
      aten("dense_1", "t.default", {{80, kDy}}, {{82, "f32[10,8]"}}, false),
      aten("dense_1", "mm.default", {{82, "f32[10,8]"}, {23, "f32[8,16]"}}, {{83, kWd}}, false),
      aten("dense_1", "t.default", {{83, kWd}}, {{84, kWt}}, false),
      aten("dense_1", "sum.dim_IntList", {{80, kDy}}, {{85, "f32[1,10]"}}),
      aten("dense_1", "view.default", {{85, "f32[1,10]"}}, {{85, "f32[10]"}}),
      aten("dense_1", "t.default", {{84, kWt}}, {{83, kWd}}, false)};
  const std::vector<OpRecord> eng = {engine("dense_1", "dense.forward", {23, 20, 22}, {24}),
                                     engine("dense_1", "dense.backward_weight", {23, 80}, {83}),
                                     engine("dense_1", "dense.backward_bias", {80}, {85}),
                                     engine("dense_1", "dense.backward_data", {80, 20}, {81})};
  const StepView view = pytorch_view(torch, eng);
  REQUIRE(view.ops.size() == 4);  // t(dw) and its t back, and the view, left out
  CHECK(view.left_out == 3);
  CHECK(view.ops[1].op == "dense.backward_weight");
  CHECK(view.ops[1].in == std::vector<Digest128>{v(23), v(80)});  // x, dy (through its t)
  CHECK(view.ops[2].op == "dense.backward_bias");
  CHECK(view.ops[3].op == "dense.backward_data");
  CHECK(view.ops[3].in == std::vector<Digest128>{v(80), v(20)});  // dy, the weight (through t)
  const auto aligned = align_ops(0, view.ops, engine_view(eng).ops);
  CHECK(aligned.aligned == 4);
  CHECK_FALSE(aligned.parting);
}

TEST_CASE("the optimizer's update of a zero bias ends at its write, not at a state as zero") {
  // Adadelta's single-tensor step on conv2d_0.bias, whose value (3) and zero state digest alike:
  // the update is read from the gradient (74) to the last write of the value, the parameter's.
  std::vector<OpRecord> torch = {
      aten("conv2d_0", "convolution.default", {{1, kX}, {2, kW}, {3, kB}}, {{4, kY}}),
      aten("conv2d_0", "convolution_backward.default", {{70, kY}, {1, kX}, {2, kW}},
           {{73, kW}, {74, kB}}),
      aten("optimizer", "mul_.Tensor", {{3, kB}}, {{3, kB}}),  // the square average, zero
      aten("optimizer", "addcmul_.default", {{3, kB}, {74, kB}, {74, kB}}, {{90, kB}}),
      aten("optimizer", "add.Tensor", {{90, kB}}, {{91, kB}}),
      aten("optimizer", "sqrt_.default", {{91, kB}}, {{92, kB}}, false),
      aten("optimizer", "add.Tensor", {{3, kB}}, {{93, kB}}),  // the delta's average + eps
      aten("optimizer", "sqrt_.default", {{93, kB}}, {{94, kB}}, false),
      aten("optimizer", "div_.Tensor", {{94, kB}, {92, kB}}, {{95, kB}}, false),
      aten("optimizer", "mul_.Tensor", {{95, kB}, {74, kB}}, {{96, kB}}, false),
      aten("optimizer", "addcmul_.default", {{3, kB}, {96, kB}, {96, kB}}, {{97, kB}}),
      aten("optimizer", "add_.Tensor", {{3, kB}, {96, kB}}, {{98, kB}})};
  const std::vector<OpRecord> eng = {
      engine("conv2d_0", "conv2d.forward", {1, 2, 3}, {4}),
      engine("conv2d_0", "conv2d.backward_filter", {1, 70}, {73}),
      engine("conv2d_0", "conv2d.backward_bias", {70}, {74}),
      engine("conv2d_0.weight", "optimizer.update", {2, 73, 60, 61}, {62, 63, 64}),
      engine("conv2d_0.bias", "optimizer.update", {3, 74, 3, 3}, {98, 90, 97})};
  const StepView view = pytorch_view(torch, eng);
  REQUIRE(view.ops.size() == 4);
  const OpRecord& update = view.ops[3];
  CHECK(update.op == "optimizer.update");
  CHECK(update.layer == "conv2d_0.bias");
  CHECK(update.in == std::vector<Digest128>{v(3), v(74)});
  CHECK(update.out == std::vector<Digest128>{v(98)});
  CHECK(view.sources[3].outputs_of == 11);
  CHECK(view.sources[3].records == std::vector<std::size_t>{3, 4, 5, 6, 7, 8, 9, 10, 11});
  const auto aligned = align_ops(0, view.ops, engine_view(eng).ops);
  CHECK(aligned.aligned == 4);  // the weight's update: PyTorch's step left it out of this one
  CHECK_FALSE(aligned.parting);
}

TEST_CASE("the engine's model layers the PyTorch run does not name are listed") {
  const std::vector<OpRecord> eng = {
      engine("conv2d_0", "conv2d.forward", {1, 2, 3}, {5}),
      engine("loss", "softmax_cross_entropy", {40, 41}, {42, 43}),
      engine("conv2d_0.bias", "optimizer.update", {3, 50, 51, 52}, {53, 54, 55}),
      engine("dense_0", "dense.forward", {5, 20, 22}, {25})};
  std::vector<OpRecord> torch = torch_conv(5);
  for (OpRecord& r : torch) r.layer = "model.0";
  CHECK(ra::compare::engine_layers_missing(eng, torch) ==
        std::vector<std::string>{"conv2d_0", "dense_0"});
  CHECK(ra::compare::engine_layers_missing(eng, torch_conv(5)) ==
        std::vector<std::string>{"dense_0"});
}

TEST_CASE("an engine trace against a PyTorch one of other layer names is refused, naming them") {
  ra::trace::Trace e, p;
  e.header.backend = "cpu";
  p.header.backend = "pytorch-cpu";
  for (ra::trace::Trace* t : {&e, &p}) t->header.trace_ops = ra::trace::OpWindow{0, 1};
  ra::trace::StepRecord se, sp;
  se.ops_recorded = sp.ops_recorded = true;
  se.ops = {engine("conv2d_0", "conv2d.forward", {1, 2, 3}, {5})};
  sp.ops = torch_conv(5);
  for (OpRecord& r : sp.ops) r.layer = "model.0";
  e.steps = {se};
  p.steps = {sp};
  CHECK_THROWS_WITH(ra::compare::align_programs(e, p),
                    Contains("only in the engine (A): conv2d_0") &&
                        Contains("the PyTorch run's modules (B): model.0") && Contains("layers={"));
  p.steps[0].ops = torch_conv(5);
  const auto aligned = ra::compare::align_programs(p, e);
  CHECK(aligned.a_reading == ra::compare::OpReading::pytorch);
  CHECK(aligned.b_reading == ra::compare::OpReading::engine);
  CHECK(aligned.fused == 1);
  CHECK(aligned.left_out == 1);
  REQUIRE(aligned.steps.size() == 1);
  CHECK(aligned.steps[0].aligned == 1);
  CHECK_FALSE(aligned.parting);
}
