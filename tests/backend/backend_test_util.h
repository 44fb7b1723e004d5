#pragma once
// Shared helpers of the backend tests: portable random inputs, geometry builders, and the
// elementwise tolerance check every op comparison uses.
//
// Tolerances. A float sum of m products, accumulated in any order (sequential, chunked, atomic),
// satisfies |computed - exact| <= gamma * sum_i |a_i b_i| with gamma ~ (m + 1) u, u = 2^-24
// (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1). The reference sums in double
// and rounds once (another u |exact|). So each output is checked against
//     |fast - reference| <= (m + 2) u * scale
// where scale = the same op applied by the reference to |inputs| (= sum of |terms|, which also
// covers cancellation). For a few hundred terms that is ~1e-5 relative to the scale: a worst-case
// bound, so tests never flake, yet any indexing error (an O(1) difference) fails it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/gemm/gemm.h"
#include "backend/geometry.h"
#include "backend/modes.h"
#include "rng/philox.h"

namespace test {

// The two kernel modes every op has on the CPU backend, for the tests that run each op in both.
inline constexpr ra::backend::KernelMode kModes[] = {ra::backend::KernelMode::deterministic,
                                                     ra::backend::KernelMode::nondeterministic};

inline constexpr double kUnitRoundoff = 1.0 / 16777216.0;  // 2^-24

// Tolerance factor for sums of `terms` float products (see above).
inline double sum_rtol(std::int64_t terms) {
  return double(terms + 2) * kUnitRoundoff;
}

// Values in [lo, hi) from Philox: the same on every platform (unlike <random> distributions).
inline std::vector<float> random_values(std::size_t count, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::vector<float> v(count);
  const ra::rng::PhiloxKey key{seed, 0x5EEDu};
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = lo + (hi - lo) * ra::rng::uniform_from_bits(ra::rng::philox_word(key, i, 0));
  }
  return v;
}

// The GEMM variants this CPU runs, portable first: the tests of every variant loop over them.
inline std::vector<ra::backend::cpu::Isa> supported_isas() {
  using ra::backend::cpu::Isa;
  std::vector<Isa> isas;
  for (Isa isa : {Isa::portable, Isa::avx2_fma, Isa::avx512_fma}) {
    if (ra::backend::cpu::isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

inline std::vector<float> abs_of(std::vector<float> v) {
  for (float& x : v) x = std::abs(x);
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Output size from input, kernel, stride and the two pads, as every framework computes it.
inline int out_extent(int in, int isa, int stride, int pad_before, int pad_after) {
  return (in + pad_before + pad_after - isa) / stride + 1;
}

inline ra::backend::ConvGeometry conv(int n, int c, int h, int w, int k, int r, int s,
                                      int stride_h = 1, int stride_w = 1, int pad_top = 0,
                                      int pad_left = 0, int pad_bottom = 0, int pad_right = 0) {
  ra::backend::ConvGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.r = r, g.s = s;
  g.stride_h = stride_h, g.stride_w = stride_w;
  g.pad_top = pad_top, g.pad_left = pad_left, g.pad_bottom = pad_bottom, g.pad_right = pad_right;
  g.p = out_extent(h, r, stride_h, pad_top, pad_bottom);
  g.q = out_extent(w, s, stride_w, pad_left, pad_right);
  return g;
}

inline ra::backend::PoolGeometry pool(int n, int c, int h, int w, int pool_h, int pool_w,
                                      int stride_h, int stride_w, int pad_top = 0, int pad_left = 0,
                                      int pad_bottom = 0, int pad_right = 0) {
  ra::backend::PoolGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.pool_h = pool_h, g.pool_w = pool_w;
  g.stride_h = stride_h, g.stride_w = stride_w, g.pad_top = pad_top, g.pad_left = pad_left;
  g.p = out_extent(h, pool_h, stride_h, pad_top, pad_bottom);
  g.q = out_extent(w, pool_w, stride_w, pad_left, pad_right);
  return g;
}

// A named pool shape, for tests that loop over several.
struct PoolCase {
  const char* name;
  ra::backend::PoolGeometry g;
};

// Elementwise |actual - expected| <= atol + rtol * scale (scale defaults to |expected|), reporting
// the element closest to (or furthest past) its bound.
struct Closeness {
  bool ok = true;
  std::size_t index = 0;
  double actual = 0, expected = 0, bound = 0;
  std::string describe() const {
    std::ostringstream out;
    out.precision(9);
    out << "worst element " << index << ": actual " << actual << " expected " << expected
        << " |diff| " << std::abs(actual - expected) << " bound " << bound;
    return out.str();
  }
};

inline Closeness compare(const std::vector<float>& actual, const std::vector<float>& expected,
                         double rtol, double atol, const std::vector<float>* scale = nullptr) {
  Closeness worst;
  if (actual.size() != expected.size())
    return {false, 0, double(actual.size()), double(expected.size()), 0};
  double worst_ratio = -1;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double s = scale != nullptr ? (*scale)[i] : std::abs(double(expected[i]));
    const double bound = atol + rtol * s;
    const double diff = std::abs(double(actual[i]) - double(expected[i]));
    const double ratio = std::isnan(diff) ? std::numeric_limits<double>::infinity()
                         : bound > 0      ? diff / bound
                         : diff > 0       ? std::numeric_limits<double>::infinity()
                                          : 0.0;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = {ratio <= 1, i, actual[i], expected[i], bound};
    }
  }
  return worst;
}

// The convolution shapes every backend is checked on: 1x1, strides, asymmetric "same" padding,
// odd sizes, batch 1, a reduction longer than one GEMM k block, uneven reduction chunks.
struct ConvCase {
  const char* name;
  ra::backend::ConvGeometry g;
};

inline std::vector<ConvCase> conv_cases() {
  return {
      {"3x3 valid", conv(2, 3, 7, 9, 5, 3, 3)},
      {"1x1 (column matrix = image)", conv(3, 5, 6, 6, 7, 1, 1)},
      {"1x1 stride 2", conv(2, 4, 7, 7, 3, 1, 1, 2, 2)},
      {"3x3 stride 2", conv(2, 3, 9, 8, 4, 3, 3, 2, 2)},
      {"same, even 4x2 kernel, pads t1 l0 b2 r1", conv(1, 2, 6, 5, 3, 4, 2, 1, 1, 1, 0, 2, 1)},
      {"same stride 2, pads t0 l0 b1 r1", conv(2, 3, 8, 8, 5, 3, 3, 2, 2, 0, 0, 1, 1)},
      {"odd sizes, batch 1, pad 1", conv(1, 17, 13, 11, 19, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"C*R*S = 360 > one k block", conv(3, 40, 10, 10, 20, 3, 3)},
      {"2x5 kernel, stride (1,2), pads t1 l2 b0 r2", conv(2, 3, 10, 11, 6, 2, 5, 1, 2, 1, 2, 0, 2)},
      {"batch 37 (uneven reduction chunks)", conv(37, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1)},
  };
}

}  // namespace test

// REQUIRE that `actual` matches `expected` elementwise; on failure names the worst element.
#define REQUIRE_CLOSE(actual, expected, rtol, atol, scale_ptr)                                 \
  do {                                                                                         \
    const test::Closeness closeness_ = test::compare(actual, expected, rtol, atol, scale_ptr); \
    INFO(#actual " vs " #expected ": " << closeness_.describe());                              \
    REQUIRE(closeness_.ok);                                                                    \
  } while (false)
