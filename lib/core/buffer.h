#pragma once
// A typed array in a Memory (host or a backend's device): the int32 labels, pooling argmax and
// dropout masks that live beside the fp32 tensors on the backend. Move-only; grows, never shrinks.
#include <cstddef>
#include <memory>
#include <utility>

#include "core/memory.h"

namespace ra {

template <class T>
class Buffer {
 public:
  explicit Buffer(Memory& memory = host_memory()) : memory_(&memory) {}
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  // Makes room for n elements (contents unspecified after a reallocation).
  void resize(std::size_t n) {
    if (n > capacity_ || !data_) {
      data_ = std::unique_ptr<T, Release>(static_cast<T*>(memory_->allocate(n * sizeof(T))),
                                          Release{memory_});
      capacity_ = n;
    }
    size_ = n;
  }
  // Copies n host elements in (an upload for device memory).
  void assign_from_host(const T* host, std::size_t n) {
    resize(n);
    memory_->upload(data(), host, n * sizeof(T));
  }

  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  Memory& memory() const noexcept { return *memory_; }

 private:
  struct Release {
    Memory* memory;
    void operator()(T* p) const noexcept { memory->deallocate(p); }
  };
  Memory* memory_;
  std::size_t size_ = 0, capacity_ = 0;
  std::unique_ptr<T, Release> data_{nullptr, Release{nullptr}};
};

}  // namespace ra
