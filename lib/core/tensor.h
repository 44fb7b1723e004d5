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

#include "core/memory.h"

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

namespace detail {
// Deleter of a buffer: gives it back to the memory it came from.
struct ReleaseTo {
  Memory* memory = nullptr;
  void operator()(float* p) const noexcept {
    if (p != nullptr) memory->deallocate(p);
  }
};
}  // namespace detail

// Dense fp32 tensor. Value semantics (copyable, movable); zero-initialised on construction.
// Its buffer lives in a Memory (host by default; a backend's device memory for a model trained
// there). Element access (operator[], begin/end, fill) is for host tensors only; data() is the
// pointer to hand to the backend that owns the memory.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape, Memory& memory = host_memory());
  Tensor(Shape shape, float fill);  // host
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;  // leaves `other` empty
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;

  const Shape& shape() const noexcept { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const noexcept { return shape_.size(); }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(float); }
  bool empty() const noexcept { return size_ == 0; }
  Memory& memory() const noexcept { return *memory_; }
  bool on_host() const noexcept { return memory_->host_accessible(); }

  float* data() noexcept { return data_.get(); }
  const float* data() const noexcept { return data_.get(); }
  float& operator[](std::size_t i) noexcept { return data_.get()[i]; }
  float operator[](std::size_t i) const noexcept { return data_.get()[i]; }
  float* begin() noexcept { return data(); }
  float* end() noexcept { return data() + size_; }
  const float* begin() const noexcept { return data(); }
  const float* end() const noexcept { return data() + size_; }

  // Changes the shape without touching data; the element count must stay the same.
  void reshape(Shape shape);
  // Resizes to a new shape in the same memory, reusing the buffer when it is large enough
  // (contents unspecified). A shape the tensor has held before allocates nothing.
  void resize(const Shape& shape);
  void resize(std::initializer_list<std::int64_t> dims);
  // resize to [n] + sample.
  void resize_batched(std::int64_t n, const Shape& sample);
  void fill(float value);  // host only
  // Copies the contents of `src` (same element count, any memory) into this tensor: a copy, an
  // upload or a download as the two memories require.
  void copy_from(const Tensor& src);
  // A host copy (a download for a device tensor).
  Tensor to_host() const;

 private:
  void allocate(std::size_t count);
  // Makes room for `count` elements (allocating only when the buffer is too small); sets size_.
  void reserve_elements(std::size_t count);

  Shape shape_;
  Memory* memory_ = &host_memory();
  std::size_t size_ = 0, capacity_ = 0;
  std::unique_ptr<float, detail::ReleaseTo> data_;
};

// True when both (host) tensors have the same shape and the same bits in every element.
bool bitwise_equal(const Tensor& a, const Tensor& b) noexcept;

}  // namespace ra
