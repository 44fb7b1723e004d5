// docs/ops.md's worked example, built: a toy op, scale (y = alpha x), added as the document adds
// an op, and observed by the op recorder and bench's timer with no change to either. Its table row
// and its ForwardingOps method stand here rather than in core/op_table.h and backend::Ops, so that
// the library carries no toy; each is written as the document writes its counterpart there.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/forwarding_ops.h"
#include "core/op_table.h"
#include "record/op_recorder.h"
#include "train/op_timer.h"

namespace {

using ra::backend::OpRegion;

// The row (in the library: an OpId enumerator and this row of kOpTable, which then take the id).
constexpr ra::OpInfo kScaleRow{static_cast<ra::OpId>(ra::kOpTable.size()),
                               "scale.forward",
                               "scale_forward",
                               "",
                               false,
                               {"x"},
                               {"y"}};

// The CPU backend's implementation (in the library: CpuOps::scale_forward, backend/cpu/).
void cpu_scale_forward(std::int64_t count, float alpha, const float* x, float* y) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = alpha * x[i];
}

// The ForwardingOps method (in the library: ForwardingOps::scale_forward, forwarding_ops.cpp).
void scale_forward(ra::backend::ForwardingOps& ops, std::int64_t count, float alpha, const float* x,
                   float* y) {
  ops.dispatch({.op = kScaleRow,
                .inputs = {OpRegion{ra::DType::f32, x, count}},
                .outputs = {OpRegion{ra::DType::f32, y, count}},
                .run = [&] { cpu_scale_forward(count, alpha, x, y); }});
}

ra::Digest128 flat_digest(const std::vector<float>& v) {
  return ra::digest_bytes(ra::DType::f32, ra::Shape{static_cast<std::int64_t>(v.size())}, v.data(),
                          v.size() * sizeof(float));
}

}  // namespace

TEST_CASE("the toy op is recorded as its table row names it", "[record][ops]") {
  ra::backend::cpu::CpuOps cpu(1);
  ra::record::OpRecorder recorder(cpu, 1);
  const std::vector<float> x{1.0f, -2.0f, 3.0f, 0.25f};
  std::vector<float> y(x.size());
  recorder.begin_step(7, true);
  recorder.enter_layer("scale_0");
  scale_forward(recorder, 4, 0.5f, x.data(), y.data());
  const std::vector<ra::trace::OpRecord> records = recorder.take_records();

  CHECK(y == std::vector<float>{0.5f, -1.0f, 1.5f, 0.125f});
  REQUIRE(records.size() == 1);
  CHECK(records[0].op == "scale.forward");
  CHECK(records[0].layer == "scale_0");
  CHECK(records[0].mode.empty());  // the row does not reduce
  CHECK(records[0].in == std::vector{flat_digest(x)});
  CHECK(records[0].out == std::vector{flat_digest(y)});
}

TEST_CASE("the toy op is timed under its row's label, after the table's ops", "[record][ops]") {
  ra::train::TimingOps timed(std::make_unique<ra::backend::cpu::CpuOps>(1));
  std::vector<float> x(8, 1.0f), y(8);
  scale_forward(timed, 8, 2.0f, x.data(), y.data());
  timed.activation_forward(ra::backend::Activation::relu, 8, x.data(), y.data());
  scale_forward(timed, 8, 2.0f, x.data(), y.data());

  const std::vector<ra::train::OpTime> times = timed.times();
  REQUIRE(times.size() == 2);
  CHECK(times[0].op == "activation_forward");
  CHECK(times[1].op == "scale_forward");
  CHECK(times[1].mode.empty());
  CHECK(times[1].calls == 2);
  CHECK(y == std::vector<float>(8, 2.0f));
}
