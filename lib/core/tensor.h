#pragma once
// Host tensors: fp32 (or int32/uint8 side data) in contiguous row-major (C) order, NCHW for images.
// A Tensor owns its buffer; storage is 64-byte aligned so vector kernels may use aligned loads.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace ra {

using Shape = std::vector<std::int64_t>;

std::int64_t element_count(const Shape& shape);
std::string to_string(const Shape& shape);  // "[128, 1, 28, 28]"

// Minimal allocator that aligns every allocation to 64 bytes (one cache line, one AVX-512 vector).
template <class T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t alignment{64};
  AlignedAllocator() noexcept = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), alignment)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, alignment); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

// Dense fp32 tensor. Value semantics (copyable, movable); zero-initialised on construction.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);
  Tensor(Shape shape, float fill);

  const Shape& shape() const noexcept { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const noexcept { return shape_.size(); }
  std::size_t size() const noexcept { return data_.size(); }
  std::size_t bytes() const noexcept { return data_.size() * sizeof(float); }
  bool empty() const noexcept { return data_.empty(); }

  float* data() noexcept { return data_.data(); }
  const float* data() const noexcept { return data_.data(); }
  float& operator[](std::size_t i) noexcept { return data_[i]; }
  float operator[](std::size_t i) const noexcept { return data_[i]; }
  float* begin() noexcept { return data_.data(); }
  float* end() noexcept { return data_.data() + data_.size(); }
  const float* begin() const noexcept { return data_.data(); }
  const float* end() const noexcept { return data_.data() + data_.size(); }

  // Changes the shape without touching data; the element count must stay the same.
  void reshape(Shape shape);
  // Resizes to a new shape, reusing the buffer when it is large enough (contents unspecified).
  void resize(Shape shape);
  void fill(float value);

 private:
  Shape shape_;
  AlignedVector<float> data_;
};

// True when both tensors have the same shape and the same bits in every element.
bool bitwise_equal(const Tensor& a, const Tensor& b) noexcept;

}  // namespace ra
