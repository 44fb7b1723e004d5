#include "core/tensor.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

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

void Tensor::allocate(std::size_t count) {
  data_ = std::unique_ptr<float, detail::ReleaseTo>(
      static_cast<float*>(memory_->allocate(count * sizeof(float))), detail::ReleaseTo{memory_});
  capacity_ = count;
}

Tensor::Tensor(Shape shape, Memory& memory) : shape_(std::move(shape)), memory_(&memory) {
  size_ = static_cast<std::size_t>(element_count(shape_));
  allocate(size_);
  memory_->zero(data(), bytes());
}

Tensor::Tensor(Shape shape, float fill_value) : Tensor(std::move(shape)) {
  fill(fill_value);
}

Tensor::Tensor(const Tensor& other) : shape_(other.shape_), memory_(other.memory_) {
  size_ = other.size_;
  allocate(size_);
  memory_->copy(data(), other.data(), bytes());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  if (memory_ != other.memory_ || capacity_ < other.size_) {
    memory_ = other.memory_;
    allocate(other.size_);
  }
  shape_ = other.shape_;
  size_ = other.size_;
  memory_->copy(data(), other.data(), bytes());
  return *this;
}

Tensor::Tensor(Tensor&& other) noexcept
    : shape_(std::move(other.shape_)),
      memory_(other.memory_),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      data_(std::move(other.data_)) {
  other.shape_.clear();
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  shape_ = std::move(other.shape_);
  other.shape_.clear();
  memory_ = other.memory_;
  size_ = std::exchange(other.size_, 0);
  capacity_ = std::exchange(other.capacity_, 0);
  data_ = std::move(other.data_);
  return *this;
}

void Tensor::reshape(Shape shape) {
  if (element_count(shape) != static_cast<std::int64_t>(size_)) {
    throw std::logic_error("reshape " + to_string(shape_) + " -> " + to_string(shape) +
                           " changes the element count");
  }
  shape_ = std::move(shape);
}

// The three resizes allocate before they change the shape, so a failed allocation leaves the
// tensor as it was; the shape goes into shape_'s own storage (assign reuses its capacity), so a
// shape the tensor has held before costs no heap allocation: the training step resizes every step.
void Tensor::reserve_elements(std::size_t count) {
  if (count > capacity_ || !data_) allocate(count);
  size_ = count;
}

void Tensor::resize(const Shape& shape) {
  reserve_elements(static_cast<std::size_t>(element_count(shape)));
  if (&shape != &shape_) shape_.assign(shape.begin(), shape.end());
}

void Tensor::resize(std::initializer_list<std::int64_t> dims) {
  std::int64_t count = 1;
  for (std::int64_t d : dims) {
    if (d < 0) throw InputError("negative dimension in shape " + to_string(Shape(dims)));
    count *= d;
  }
  reserve_elements(static_cast<std::size_t>(count));
  shape_.assign(dims.begin(), dims.end());
}

void Tensor::resize_batched(std::int64_t n, const Shape& sample) {
  if (n < 0) throw InputError("negative batch dimension " + std::to_string(n));
  reserve_elements(static_cast<std::size_t>(n * element_count(sample)));
  shape_.resize(sample.size() + 1);
  shape_[0] = n;
  std::copy(sample.begin(), sample.end(), shape_.begin() + 1);
}

void Tensor::fill(float value) {
  if (!on_host())
    throw std::logic_error("Tensor::fill on a tensor in " + std::string(memory_->name()) +
                           " memory");
  std::fill(begin(), end(), value);
}

void Tensor::copy_from(const Tensor& src) {
  if (src.size_ != size_) {
    throw std::logic_error("copy_from " + to_string(src.shape_) + " into " + to_string(shape_));
  }
  if (src.memory_ == memory_) {
    memory_->copy(data(), src.data(), bytes());
  } else if (src.on_host()) {
    memory_->upload(data(), src.data(), bytes());
  } else if (on_host()) {
    src.memory_->download(data(), src.data(), bytes());
  } else {
    throw std::logic_error("copy between two device memories");
  }
}

Tensor Tensor::to_host() const {
  Tensor host(shape_);
  host.copy_from(*this);
  return host;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) noexcept {
  return a.shape() == b.shape() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

}  // namespace ra
