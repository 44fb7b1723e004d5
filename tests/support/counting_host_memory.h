#pragma once
// Host memory that counts its allocations and frees: what stands in for a backend's staging
// memory (page-locked for CUDA) where a test checks that buffers are reused, not reallocated.
#include <atomic>
#include <cstddef>

#include "core/memory.h"

namespace ra::test {

class CountingHostMemory final : public ra::Memory {
 public:
  std::atomic<std::size_t> allocations{0}, frees{0};
  bool host_accessible() const noexcept override { return true; }
  const char* name() const noexcept override { return "counting-host"; }
  void* allocate(std::size_t bytes) override {
    ++allocations;
    return ra::host_memory().allocate(bytes);
  }
  void deallocate(void* p) noexcept override {
    if (p != nullptr) ++frees;
    ra::host_memory().deallocate(p);
  }
  void zero(void* p, std::size_t bytes) override { ra::host_memory().zero(p, bytes); }
  void copy(void* d, const void* s, std::size_t bytes) override {
    ra::host_memory().copy(d, s, bytes);
  }
  void upload(void* d, const void* s, std::size_t bytes) override {
    ra::host_memory().copy(d, s, bytes);
  }
  void download(void* d, const void* s, std::size_t bytes) override {
    ra::host_memory().copy(d, s, bytes);
  }
};

}  // namespace ra::test
