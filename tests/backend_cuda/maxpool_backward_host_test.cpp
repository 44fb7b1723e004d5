// The host twin of the deterministic maxpool backward kernels: the per-thread functions of
// kernels/maxpool_backward.h, which kernels/maxpool.cu runs one per GPU thread, run here over every
// thread index on the CPU, against an independent naive scatter (dx = 0, then dx[argmax[i]] +=
// g(i) in increasing i: the CPU backend's order, so the bits must be equal). Geometries cover
// overlapping windows (stride < pool), gaps (stride > pool), odd sizes whose last rows and columns
// no window covers, padding, windows of padding only, ties, signed zeros and the relu gate.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/reference/reference_ops.h"
#include "backend/geometry.h"
#include "kernels/maxpool_backward.h"

namespace {

using ra::backend::PoolGeometry;
namespace kernels = ra::kernels;

struct PoolCase {
  int h, w, pool_h, pool_w, stride_h, stride_w, pad_top, pad_left;
};

PoolGeometry geometry_of(const PoolCase& c) {
  PoolGeometry g;
  g.n = 2, g.c = 3, g.h = c.h, g.w = c.w;
  g.pool_h = c.pool_h, g.pool_w = c.pool_w;
  g.stride_h = c.stride_h, g.stride_w = c.stride_w;
  g.pad_top = c.pad_top, g.pad_left = c.pad_left;
  // Windows may hang over the bottom/right edge by the same padding ("same" style).
  g.p = (c.h + 2 * c.pad_top - c.pool_h) / c.stride_h + 1;
  g.q = (c.w + 2 * c.pad_left - c.pool_w) / c.stride_w + 1;
  return g;
}

const PoolCase kCases[] = {
    {8, 8, 2, 2, 2, 2, 0, 0},    // Keras' 2x2/2: disjoint, every cell covered
    {9, 7, 2, 2, 2, 2, 0, 0},    // odd sizes: the last row and column are in no window
    {10, 11, 2, 2, 3, 3, 0, 0},  // stride > pool: gaps between windows
    {7, 8, 3, 3, 3, 3, 1, 1},    // disjoint with padding
    {4, 4, 2, 2, 2, 2, 2, 0},    // rows of windows that hold only padding (argmax -1)
    {9, 7, 3, 3, 2, 2, 1, 1},    // overlapping windows and padding
    {6, 5, 3, 3, 1, 1, 1, 1},    // stride 1: a cell in up to 9 windows
    {7, 9, 3, 2, 1, 2, 0, 0},    // overlapping rows, disjoint columns: the gather path
};

// Deterministic values in [-1, 1) on a grid of 0.25 (many ties), a few of them -0.0f.
std::vector<float> grid_values(std::size_t size, std::uint32_t seed) {
  std::vector<float> v(size);
  std::uint32_t state = seed * 2654435761u + 1u;
  for (std::size_t i = 0; i < size; ++i) {
    state = state * 1664525u + 1013904223u;
    v[i] = static_cast<float>(static_cast<int>(state >> 29) - 4) / 4.0f;
    if (i % 11 == 3) v[i] = -0.0f;
  }
  return v;
}

float gated(const std::vector<float>& dy, const float* gate, std::size_t i) {
  return gate == nullptr || gate[i] > 0.0f ? dy[i] : 0.0f;
}

// The independent naive computation: the CPU's deterministic scatter.
std::vector<float> naive_scatter(const PoolGeometry& g, const std::vector<float>& dy,
                                 const float* gate, const std::vector<std::int32_t>& argmax) {
  std::vector<float> dx(std::size_t(g.x_size()), 0.0f);
  for (std::size_t i = 0; i < dy.size(); ++i) {
    if (argmax[i] >= 0) dx[std::size_t(argmax[i])] += gated(dy, gate, i);
  }
  return dx;
}

// What kernels/maxpool.cu launches in deterministic mode, one call per GPU thread index. dx starts
// as NaN so that a cell no thread writes shows up.
std::vector<float> host_twin(const PoolGeometry& g, const std::vector<float>& dy, const float* gate,
                             const std::vector<std::int32_t>& argmax) {
  std::vector<float> dx(std::size_t(g.x_size()), std::numeric_limits<float>::quiet_NaN());
  if (kernels::pool_windows_disjoint(g) && g.y_size() > 0) {
    for (int out = 0; out < g.y_size(); ++out) {
      kernels::maxpool_backward_owned_cells(g, out, dy.data(), gate, argmax.data(), dx.data());
    }
  } else {
    for (int in = 0; in < g.x_size(); ++in) {
      kernels::maxpool_backward_gathered_cell(g, in, dy.data(), gate, argmax.data(), dx.data());
    }
  }
  return dx;
}

void require_same_floats(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("dx[" << i << "] = " << got[i] << ", want " << want[i]);
    REQUIRE(std::memcmp(&got[i], &want[i], sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("maxpool backward host twin gives the naive scatter's bits",
          "[cuda][host][kernels][maxpool]") {
  for (const PoolCase& c : kCases) {
    const PoolGeometry g = geometry_of(c);
    INFO("pool " << g.pool_h << "x" << g.pool_w << " stride " << g.stride_h << "x" << g.stride_w
                 << " pad " << g.pad_top << "," << g.pad_left << " on " << g.h << "x" << g.w
                 << " -> " << g.p << "x" << g.q);
    const std::vector<float> x = grid_values(std::size_t(g.x_size()), 1);
    std::vector<float> y(std::size_t(g.y_size()));
    std::vector<std::int32_t> argmax(y.size());
    ra::backend::cpu::reference::maxpool2d_forward(g, x.data(), y.data(), argmax.data());
    const std::vector<float> dy = grid_values(y.size(), 2);
    require_same_floats(host_twin(g, dy, nullptr, argmax), naive_scatter(g, dy, nullptr, argmax));
    // The relu gate: the pooled output itself, about half of it <= 0 (zeros included).
    require_same_floats(host_twin(g, dy, y.data(), argmax), naive_scatter(g, dy, y.data(), argmax));
  }
}

TEST_CASE("maxpool backward: disjoint windows give every cell exactly one owner",
          "[cuda][host][kernels][maxpool]") {
  // The owner kernel writes without atomics: two outputs owning one cell would race.
  for (const PoolCase& c : kCases) {
    const PoolGeometry g = geometry_of(c);
    if (!kernels::pool_windows_disjoint(g)) continue;
    INFO("pool " << g.pool_h << " stride " << g.stride_h << " on " << g.h << "x" << g.w);
    std::vector<int> owners(std::size_t(g.h) * g.w, 0);
    for (int p = 0; p < g.p; ++p) {
      const kernels::PoolCellRange rows =
          kernels::pool_owned_range(p, g.p, g.stride_h, g.pad_top, g.h);
      // Each window lies inside its owner's block (or is padding only).
      const int window_begin = p * g.stride_h - g.pad_top;
      if (window_begin + g.pool_h > 0 && window_begin < g.h) {
        CHECK(rows.begin <= std::max(0, window_begin));
        CHECK(rows.end >= std::min(g.h, window_begin + g.pool_h));
      }
      for (int q = 0; q < g.q; ++q) {
        const kernels::PoolCellRange cols =
            kernels::pool_owned_range(q, g.q, g.stride_w, g.pad_left, g.w);
        for (int r = rows.begin; r < rows.end; ++r) {
          for (int col = cols.begin; col < cols.end; ++col) ++owners[std::size_t(r) * g.w + col];
        }
      }
    }
    for (const int count : owners) REQUIRE(count == 1);
  }
}

TEST_CASE("maxpool backward adds into zero: a -0.0f gradient becomes +0.0f, as on the CPU",
          "[cuda][host][kernels][maxpool]") {
  const PoolGeometry g = geometry_of({2, 2, 2, 2, 2, 2, 0, 0});
  const std::vector<float> dy = {-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f};
  const std::vector<std::int32_t> argmax = {1, 4, 8, 15, 18, 23};
  const std::vector<float> dx = host_twin(g, dy, nullptr, argmax);
  for (const float v : dx) REQUIRE_FALSE(std::signbit(v));
}
