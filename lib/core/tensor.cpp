#include "core/tensor.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace ra {

std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw InputError("negative dimension in shape " + to_string(shape));
    n *= d;
  }
  return n;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Tensor(Shape shape) : shape_(std::move(shape)), data_(element_count(shape_), 0.0f) {}

Tensor::Tensor(Shape shape, float fill)
    : shape_(std::move(shape)), data_(element_count(shape_), fill) {}

void Tensor::reshape(Shape shape) {
  if (element_count(shape) != static_cast<std::int64_t>(data_.size())) {
    throw std::logic_error("reshape " + to_string(shape_) + " -> " + to_string(shape) +
                           " changes the element count");
  }
  shape_ = std::move(shape);
}

void Tensor::resize(Shape shape) {
  data_.resize(element_count(shape));
  shape_ = std::move(shape);
}

void Tensor::fill(float value) {
  std::fill(data_.begin(), data_.end(), value);
}

bool bitwise_equal(const Tensor& a, const Tensor& b) noexcept {
  return a.shape() == b.shape() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

}  // namespace ra
