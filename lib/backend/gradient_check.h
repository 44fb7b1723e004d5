#pragma once
// Finite-difference gradient checks: the yardstick of every backward op (the rule: every backward
// op has a finite-difference gradient check, so no analytic gradient is trusted unchecked),
// shipped in the library so that layer and model tests use the same tool.
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ra::backend {

// Central differences (f(v + h e_i) - f(v - h e_i)) / 2h of a scalar objective with respect to
// each of `values` (the objective reads them), each restored afterwards. In double the error is
// about h^2 |f'''| / 6 (truncation) + 1e-16 |f| / h (rounding): h = 1e-4 gives ~1e-9 for smooth
// objectives of size ~1; for objectives linear in `values` the truncation term vanishes.
std::vector<double> central_differences(std::span<double> values, double step,
                                        const std::function<double()>& objective);

// Compares an analytic gradient with a numeric one, elementwise:
// |analytic - numeric| <= atol + rtol * |numeric|. Reports the element that exceeds its bound
// the most (or the closest call when none does).
struct GradientComparison {
  bool ok = true;
  std::size_t index = 0;  // worst element
  double analytic = 0, numeric = 0, bound = 0;
  std::string describe() const;  // "element 12: analytic 0.5 numeric 0.49 (bound 1e-5)"
};
GradientComparison compare_gradients(std::span<const float> analytic,
                                     std::span<const double> numeric, double rtol, double atol);

}  // namespace ra::backend
