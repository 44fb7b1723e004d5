#pragma once
// Order statistics shared by the trainer's summary and `repro-audit bench`.
#include <algorithm>
#include <vector>

namespace ra {

// The median of `values` (the mean of the two middle values for an even count); 0 when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double m = values[mid];
  if (values.size() % 2 == 0) {
    m = (m + *std::max_element(values.begin(), values.begin() + mid)) / 2.0;
  }
  return m;
}

}  // namespace ra
