#include "compare/output_difference.h"

#include <algorithm>
#include <cstring>
#include <span>

namespace ra::compare {

std::vector<RootCause::OutputDifference> output_differences(
    const std::vector<std::vector<unsigned char>>& a,
    const std::vector<std::vector<unsigned char>>& b, const std::vector<DType>& dtypes) {
  std::vector<RootCause::OutputDifference> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    RootCause::OutputDifference d;
    d.output = i;
    d.dtype = dtypes[i];
    const std::size_t w = dtype_bytes(d.dtype);
    d.elements = static_cast<std::int64_t>(a[i].size() / w);
    if (d.dtype == DType::f32) {
      d.difference =
          compare_values(std::span(reinterpret_cast<const float*>(a[i].data()), a[i].size() / 4),
                         std::span(reinterpret_cast<const float*>(b[i].data()), b[i].size() / 4));
    } else {
      for (std::size_t e = 0; e < a[i].size(); e += w) {
        if (std::memcmp(a[i].data() + e, b[i].data() + e, w) != 0) ++d.difference.differing;
      }
    }
    out.push_back(d);
  }
  return out;
}

void widen(std::vector<RootCause::OutputDifference>& spread, const RootCause::OutputDifference& d) {
  auto it = std::find_if(spread.begin(), spread.end(), [&](const RootCause::OutputDifference& s) {
    return s.output == d.output;
  });
  if (it == spread.end()) {
    spread.push_back(d);
    return;
  }
  it->difference = widest(it->difference, d.difference);
}

}  // namespace ra::compare
