#include "core/memory.h"

#include <cstring>
#include <new>

namespace ra {
namespace {

class HostMemory final : public Memory {
 public:
  bool host_accessible() const noexcept override { return true; }
  const char* name() const noexcept override { return "host"; }
  void* allocate(std::size_t bytes) override {
    return ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{64});
  }
  void deallocate(void* p) noexcept override { ::operator delete (p, std::align_val_t{64}); }
  void zero(void* p, std::size_t bytes) override {
    if (bytes) std::memset(p, 0, bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void upload(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void download(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
};

}  // namespace

Memory& host_memory() {
  static HostMemory memory;
  return memory;
}

}  // namespace ra
