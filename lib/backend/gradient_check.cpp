#include "backend/gradient_check.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace ra::backend {

std::vector<double> central_differences(std::span<double> values, double step,
                                        const std::function<double()>& objective) {
  std::vector<double> gradient(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double saved = values[i];
    values[i] = saved + step;
    const double up = objective();
    values[i] = saved - step;
    const double down = objective();
    values[i] = saved;
    gradient[i] = (up - down) / (2 * step);
  }
  return gradient;
}

GradientComparison compare_gradients(std::span<const float> analytic,
                                     std::span<const double> numeric, double rtol, double atol) {
  if (analytic.size() != numeric.size()) {
    throw std::invalid_argument("compare_gradients: sizes differ");
  }
  GradientComparison worst;
  double worst_ratio = -1;
  for (std::size_t i = 0; i < analytic.size(); ++i) {
    const double bound = atol + rtol * std::abs(numeric[i]);
    const double error = std::abs(double(analytic[i]) - numeric[i]);
    const double ratio = std::isnan(error) ? INFINITY : error / bound;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = {ratio <= 1, i, analytic[i], numeric[i], bound};
    }
  }
  return worst;
}

std::string GradientComparison::describe() const {
  std::ostringstream out;
  out.precision(9);
  out << "element " << index << ": analytic " << analytic << " numeric " << numeric << " (bound "
      << bound << ")";
  return out.str();
}

}  // namespace ra::backend
