#include "compare/statistics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "rng/philox.h"
#include "rng/stream.h"

namespace ra::compare {
namespace {

double sample_std(std::span<const double> values) {
  return summarize(values).std;
}

double spread_ratio(double same_std, double different_std) {
  if (different_std > 0) return same_std / different_std;
  return same_std > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

// Monotone map of float bit patterns onto unsigned integers: positive floats (sign clear) move up
// by 2^31, negative floats are complemented so that larger magnitudes map lower. -0 (0x80000000)
// maps to 0x7FFFFFFF, +0 to 0x80000000: adjacent.
std::uint32_t ordered_key(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Resamples `values` with replacement into `out`; draw `draw` of the bootstrap stream. Each index
// takes one Philox block (64 of its bits): counter (position, draw).
void resample(std::span<const double> values, rng::PhiloxKey key, std::uint64_t draw,
              std::vector<double>& out) {
  out.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const rng::PhiloxBlock block = rng::philox_block(key, i, draw);
    const std::uint64_t random64 = (static_cast<std::uint64_t>(block.v[1]) << 32) | block.v[0];
    out[i] = values[rng::uniform_below(random64, values.size())];
  }
}

}  // namespace

Summary summarize(std::span<const double> values) {
  Summary s;
  s.n = values.size();
  if (values.empty()) return s;
  double sum = 0;
  s.min = s.max = values[0];
  for (double v : values) {
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean = sum / static_cast<double>(s.n);
  if (s.n >= 2) {
    double squares = 0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(squares / static_cast<double>(s.n - 1));
  }
  return s;
}

RatioEstimate std_ratio(std::span<const double> same_seed, std::span<const double> different_seed,
                        int resamples, double confidence) {
  if (resamples < 1) throw std::invalid_argument("std_ratio: resamples must be at least 1");
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument("std_ratio: confidence must lie in (0, 1)");
  }
  RatioEstimate e;
  e.confidence = confidence;
  const double same_std = sample_std(same_seed);
  const double different_std = sample_std(different_seed);
  e.ratio = spread_ratio(same_std, different_std);
  e.low = e.high = e.ratio;

  if (same_seed.size() < kMinRunsForTrustedRatio ||
      different_seed.size() < kMinRunsForTrustedRatio) {
    e.warning = "too few runs for a reliable spread: " + std::to_string(same_seed.size()) +
                " same-seed and " + std::to_string(different_seed.size()) +
                " different-seed (at least " + std::to_string(kMinRunsForTrustedRatio) +
                " each needed)";
  } else if (different_std == 0) {
    e.warning = "different-seed runs do not vary (std 0): the ratio is undefined";
  } else {
    e.trustworthy = true;
  }
  if (same_seed.size() < 2 || different_seed.size() < 2 || different_std == 0) return e;

  // Draw 2r resamples the same-seed group, draw 2r + 1 the different-seed group: the groups are
  // resampled independently, and every draw is a pure function of (r, position).
  const rng::PhiloxKey key = rng::derive_key(0, "stats/bootstrap");
  std::vector<double> ratios(static_cast<std::size_t>(resamples));
  std::vector<double> same, different;
  for (int r = 0; r < resamples; ++r) {
    resample(same_seed, key, 2 * static_cast<std::uint64_t>(r), same);
    resample(different_seed, key, 2 * static_cast<std::uint64_t>(r) + 1, different);
    ratios[static_cast<std::size_t>(r)] = spread_ratio(sample_std(same), sample_std(different));
  }
  set_percentile_interval(ratios, e);
  e.resamples = resamples;
  return e;
}

void set_percentile_interval(std::vector<double>& ratios, RatioEstimate& e) {
  std::sort(ratios.begin(), ratios.end());
  // 2.5 % of the resamples lie strictly below low and at most 2.5 % strictly above high.
  const double tail = (1 - e.confidence) / 2;
  const auto rank = [&](double q) {
    const auto k =
        static_cast<std::size_t>(std::ceil(q * static_cast<double>(ratios.size()) - 1e-9));
    return std::clamp<std::size_t>(k, 1, ratios.size()) - 1;
  };
  e.low = ratios[rank(tail)];
  e.high = ratios[rank(1 - tail)];
}

std::uint64_t ulp_distance(float a, float b) {
  if (std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<std::uint64_t>::max();
  const std::uint32_t ka = ordered_key(a), kb = ordered_key(b);
  return ka > kb ? ka - kb : kb - ka;
}

TensorDifference compare_tensors(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    throw std::logic_error("compare_tensors: shapes differ: " + ra::to_string(a.shape()) + " vs " +
                           ra::to_string(b.shape()));
  }
  return compare_values(std::span<const float>(a.data(), a.size()),
                        std::span<const float>(b.data(), b.size()));
}

TensorDifference compare_values(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) {
    throw std::logic_error("compare_values: " + std::to_string(a.size()) + " vs " +
                           std::to_string(b.size()) + " values");
  }
  TensorDifference d;
  double scale = 0;  // the largest finite magnitude of either array
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (const float v : {a[i], b[i]}) {
      if (std::isfinite(v)) scale = std::max(scale, std::abs(static_cast<double>(v)));
    }
    const std::uint64_t ulp = ulp_distance(a[i], b[i]);
    if (ulp == 0) continue;
    ++d.differing;
    d.max_ulp = std::max(d.max_ulp, ulp);
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      d.max_ulp_same_sign = ulp;  // UINT64_MAX: a NaN against something else
      continue;
    }
    d.max_abs = std::max(d.max_abs, std::abs(static_cast<double>(a[i]) - b[i]));
    if (a[i] != 0 && b[i] != 0 && std::signbit(a[i]) != std::signbit(b[i])) {
      ++d.sign_flips;
    } else {
      d.max_ulp_same_sign = std::max(d.max_ulp_same_sign, ulp);
    }
  }
  // Guarding zero: max_abs > 0 with scale 0 takes an infinity against another value (every
  // finite value is then a zero), and is infinitely far.
  if (d.max_abs > 0) {
    d.max_relative = scale > 0 ? d.max_abs / scale : std::numeric_limits<double>::infinity();
  }
  return d;
}

TensorDifference widest(const TensorDifference& a, const TensorDifference& b) {
  TensorDifference w;
  w.differing = std::max(a.differing, b.differing);
  w.sign_flips = std::max(a.sign_flips, b.sign_flips);
  w.max_abs = std::max(a.max_abs, b.max_abs);
  w.max_relative = std::max(a.max_relative, b.max_relative);
  w.max_ulp = std::max(a.max_ulp, b.max_ulp);
  w.max_ulp_same_sign = std::max(a.max_ulp_same_sign, b.max_ulp_same_sign);
  return w;
}

TensorDifference combined(const TensorDifference& a, const TensorDifference& b) {
  TensorDifference c = widest(a, b);
  c.differing = a.differing + b.differing;
  c.sign_flips = a.sign_flips + b.sign_flips;
  return c;
}

}  // namespace ra::compare
