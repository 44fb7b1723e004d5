// The invariance recorder (record/invariance_recorder.h) on the CPU backend: the anchor's row of
// each activation and the whole of each parameter, digested as flat regions; the control's one-ULP
// change of the first order-dependent op's anchor row, only in a batch with other samples.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <span>
#include <unordered_set>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "core/digest.h"
#include "core/error.h"
#include "record/invariance_recorder.h"

namespace {

using ra::backend::Activation;
using ra::backend::DenseGeometry;

// Digest of `count` floats from `data`, as the recorder digests a region: shape [count].
ra::Digest128 row_region_digest(const float* data, std::size_t count) {
  return ra::digest_bytes(ra::DType::f32, ra::Shape{static_cast<std::int64_t>(count)}, data,
                          count * sizeof(float));
}

struct DenseCase {
  DenseGeometry g{3, 4, 2};
  std::vector<float> x{1, 2, 3, 4, -1, 0.5f, 0.25f, 2, 8, 7, 6, 5};
  std::vector<float> w{0.5f, -1, 2, 0.125f, 3, 1, -2, 1};
  std::vector<float> b{0.25f, -0.5f};
  std::vector<float> y = std::vector<float>(6);
};

}  // namespace

TEST_CASE("invariance recorder: anchor rows and whole parameters", "[record][invariance]") {
  ra::backend::cpu::CpuOps cpu(2);
  DenseCase c;
  ra::record::InvarianceRecorder recorder(cpu, {c.w.data(), c.b.data()});
  recorder.enter_layer("dense_0");
  recorder.begin_pass(3, 1, false);
  recorder.dense_forward(c.g, c.x.data(), c.w.data(), c.b.data(), Activation::relu, c.y.data());
  const std::vector<ra::trace::InvarianceOp> ops = recorder.take_ops();
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].op == "dense_forward");
  CHECK(ops[0].module == "dense_0");
  REQUIRE(ops[0].inputs.size() == 3);
  CHECK_FALSE(ops[0].inputs[0].whole);
  CHECK(ops[0].inputs[0].digest == row_region_digest(c.x.data() + 4, 4));  // row 1 of x [3, 4]
  CHECK(ops[0].inputs[1].whole);
  CHECK(ops[0].inputs[1].digest == row_region_digest(c.w.data(), 8));
  CHECK(ops[0].inputs[2].whole);
  CHECK(ops[0].inputs[2].digest == row_region_digest(c.b.data(), 2));
  REQUIRE(ops[0].output);
  CHECK_FALSE(ops[0].output->whole);
  CHECK(ops[0].output->digest == row_region_digest(c.y.data() + 2, 2));  // row 1 of y [3, 2]
  CHECK_FALSE(recorder.control_op());
  CHECK_THROWS_AS(recorder.begin_pass(3, 3, false), ra::InputError);
  CHECK_THROWS_AS(recorder.begin_pass(0, 0, false), ra::InputError);
}

TEST_CASE("invariance recorder: the control moves the anchor's row by one ULP",
          "[record][invariance]") {
  ra::backend::cpu::CpuOps cpu(1);
  DenseCase c;
  std::vector<float> plain(6);
  cpu.dense_forward(c.g, c.x.data(), c.w.data(), c.b.data(), Activation::none, plain.data());
  ra::record::InvarianceRecorder recorder(cpu, {c.w.data(), c.b.data()});
  recorder.begin_pass(3, 2, true);
  // Not order-dependent: an activation before the product is left alone.
  std::vector<float> relu_x(12);
  recorder.activation_forward(Activation::relu, 12, c.x.data(), relu_x.data());
  recorder.dense_forward(c.g, c.x.data(), c.w.data(), c.b.data(), Activation::none, c.y.data());
  const std::vector<ra::trace::InvarianceOp> ops = recorder.take_ops();
  REQUIRE(recorder.control_op() == std::optional<int>(1));
  for (int i = 0; i < 6; ++i) {
    INFO("element " << i);
    const float expected =
        i < 4 ? plain[i] : std::nextafter(plain[i], std::numeric_limits<float>::infinity());
    CHECK(c.y[i] == expected);
  }
  // Digested after the change: the record shows the changed row.
  CHECK(ops[1].output->digest == row_region_digest(c.y.data() + 4, 2));
  CHECK(ops[1].output->digest != row_region_digest(plain.data() + 4, 2));

  // A batch of one is every sweep's reference: never changed.
  const DenseGeometry one{1, 4, 2};
  std::vector<float> y1(2);
  recorder.begin_pass(1, 0, true);
  recorder.dense_forward(one, c.x.data(), c.w.data(), c.b.data(), Activation::none, y1.data());
  CHECK_FALSE(recorder.control_op());
  CHECK(y1[0] == plain[0]);
  CHECK(y1[1] == plain[1]);
}
