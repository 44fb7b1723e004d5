// The pixel-major unpooling of the fused conv + max-pool filter gradient (unpool_transposed.h):
// bit for bit the transposition of maxpool2d_backward's planes, and bias sums with plane_sum's
// bits, for every kernel variant this CPU runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/pool/unpool_transposed.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend_test_util.h"
#include "core/error.h"

using ra::backend::MaxPoolGradient;
using ra::backend::PoolGeometry;
using ra::backend::cpu::Isa;
using ra::backend::cpu::isa_name;

namespace {

using test::PoolCase;

// 2x2/2 pools of several shapes.
std::vector<PoolCase> pooled_cases() {
  return {
      // The Keras MNIST conv2 pool: whole 16 x 16 blocks of channels and pooled outputs.
      {"64 channels, 24 x 24", test::pool(2, 64, 24, 24, 2, 2, 2, 2)},
      // Channel and output remainders beside whole blocks, an odd last row.
      {"35 channels, 13 x 36", test::pool(2, 35, 13, 36, 2, 2, 2, 2)},
      // Fewer than 16 outputs and channels, odd last row and column.
      {"5 channels, 7 x 9", test::pool(3, 5, 7, 9, 2, 2, 2, 2)},
  };
}

// A pooled gradient with some -0 (which unpooling turns into +0) and a gate with some zeros.
struct PooledData {
  std::vector<float> x, pooled, dy;
  std::vector<std::int32_t> argmax;

  explicit PooledData(const PoolGeometry& g) {
    x = test::random_values(static_cast<std::size_t>(g.x_size()), 71);
    for (std::size_t i = 0; i < x.size(); i += 7) x[i] = 0.0f;
    pooled.resize(static_cast<std::size_t>(g.y_size()));
    argmax.resize(pooled.size());
    ra::backend::cpu::CpuOps ops(1);
    ops.maxpool2d_forward(g, x.data(), pooled.data(), argmax.data());
    dy = test::random_values(pooled.size(), 72);
    for (std::size_t i = 0; i < dy.size(); i += 5) dy[i] = -0.0f;
  }
  MaxPoolGradient gradient(bool gated) const {
    return {dy.data(), argmax.data(), gated ? pooled.data() : nullptr};
  }
};

// Image n of maxpool2d_backward's dx, transposed to [pixel][stride], NaN in the lanes past C.
std::vector<float> expected_transposed(const PoolGeometry& g, const PooledData& data, bool gated,
                                       std::int64_t n, std::int64_t stride) {
  std::vector<float> dx(static_cast<std::size_t>(g.x_size()));
  ra::backend::cpu::CpuOps ops(1);
  ops.maxpool2d_backward(g, data.dy.data(), data.argmax.data(),
                         gated ? data.pooled.data() : nullptr, dx.data(),
                         ra::backend::KernelMode::deterministic);
  const std::int64_t pixels = std::int64_t(g.h) * g.w;
  std::vector<float> t(static_cast<std::size_t>(pixels * stride),
                       std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t pixel = 0; pixel < pixels; ++pixel) {
    for (std::int64_t c = 0; c < g.c; ++c) {
      t[pixel * stride + c] = dx[(n * g.c + c) * pixels + pixel];
    }
  }
  return t;
}

}  // namespace

TEST_CASE("unpool_image_transposed is maxpool2d_backward's image, transposed, bit for bit",
          "[backend][pool]") {
  for (const PoolCase& pc : pooled_cases()) {
    const PoolGeometry& g = pc.g;
    const PooledData data(g);
    const std::int64_t stride = g.c + 3;  // lanes past the channels must be left alone
    const std::int64_t pixels = std::int64_t(g.h) * g.w;
    for (const Isa isa : test::supported_isas()) {
      for (const bool gated : {false, true}) {
        for (std::int64_t n = 0; n < g.n; ++n) {
          INFO(pc.name << ", " << isa_name(isa) << (gated ? ", gated" : "") << ", image " << n);
          // The buffer holds whatever came before: every float in lanes [0, C) must be written.
          std::vector<float> actual(static_cast<std::size_t>(pixels * stride), 7.0f);
          for (std::int64_t pixel = 0; pixel < pixels; ++pixel) {
            for (std::int64_t c = g.c; c < stride; ++c) {
              actual[pixel * stride + c] = std::numeric_limits<float>::quiet_NaN();
            }
          }
          ra::backend::cpu::unpool_image_transposed(g, data.gradient(gated), n, actual.data(),
                                                    stride, isa);
          const std::vector<float> expected = expected_transposed(g, data, gated, n, stride);
          REQUIRE(test::same_bits(actual, expected));
        }
      }
    }
  }
}

TEST_CASE("unpool_image_transposed throws for an argmax outside its window", "[backend][pool]") {
  const PoolGeometry g = test::pool(1, 35, 13, 36, 2, 2, 2, 2);
  const std::int64_t pooled = std::int64_t(g.p) * g.q;
  // Inside a whole 16 x 16 block, in the channel remainder, and in the output remainder.
  for (const std::int64_t bad : {std::int64_t(3) * pooled + 20, std::int64_t(33) * pooled + 5,
                                 std::int64_t(10) * pooled + pooled - 2}) {
    PooledData data(g);
    data.argmax[static_cast<std::size_t>(bad)] += 2;  // the next window's element
    std::vector<float> dy_t(static_cast<std::size_t>(std::int64_t(g.h) * g.w * g.c));
    for (const Isa isa : test::supported_isas()) {
      INFO(isa_name(isa) << ", pooled output " << bad);
      REQUIRE_THROWS_AS(ra::backend::cpu::unpool_image_transposed(g, data.gradient(true), 0,
                                                                  dy_t.data(), g.c, isa),
                        ra::RuntimeFailure);
    }
  }
}

TEST_CASE("add_column_plane_sums has plane_sum's bits per column", "[backend][reduction]") {
  for (const std::int64_t count : {std::int64_t(576), std::int64_t(13), std::int64_t(1)}) {
    for (const std::int64_t channels : {std::int64_t(64), std::int64_t(35), std::int64_t(5)}) {
      const std::int64_t stride = channels + 11;
      // Values of mixed magnitude, so that a different order of the adds changes the sums.
      std::vector<float> rows = test::random_values(static_cast<std::size_t>(count * stride), 81);
      for (std::size_t i = 0; i < rows.size(); i += 3) rows[i] *= 1024.0f;
      const std::vector<float> start = test::random_values(static_cast<std::size_t>(channels), 82);
      std::vector<float> expected = start;
      for (std::int64_t c = 0; c < channels; ++c) {
        std::vector<float> column(static_cast<std::size_t>(count));
        for (std::int64_t j = 0; j < count; ++j) column[j] = rows[j * stride + c];
        expected[c] += ra::backend::cpu::plane_sum(column.data(), count);
      }
      for (const Isa isa : test::supported_isas()) {
        INFO(isa_name(isa) << ", " << count << " rows, " << channels << " channels");
        std::vector<float> sums = start;
        ra::backend::cpu::add_column_plane_sums(rows.data(), count, stride, channels, sums.data(),
                                                isa);
        REQUIRE(test::same_bits(sums, expected));
      }
    }
  }
}
