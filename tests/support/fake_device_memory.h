#pragma once
// Host memory that says it is a device's (host_accessible() false), counting the copies that
// cross (download_all: each region a download, the call one batch): what a test of
// device-backend behaviour runs on where there is no GPU.
#include <atomic>
#include <cstddef>

#include "core/memory.h"

namespace ra::test {

class FakeDeviceMemory final : public ra::Memory {
 public:
  std::atomic<std::size_t> uploads{0}, downloads{0}, download_batches{0};
  bool host_accessible() const noexcept override { return false; }
  const char* name() const noexcept override { return "fake-device"; }
  void* allocate(std::size_t bytes) override { return ra::host_memory().allocate(bytes); }
  void deallocate(void* p) noexcept override { ra::host_memory().deallocate(p); }
  void zero(void* p, std::size_t bytes) override { ra::host_memory().zero(p, bytes); }
  void copy(void* d, const void* s, std::size_t bytes) override {
    ra::host_memory().copy(d, s, bytes);
  }
  void upload(void* d, const void* s, std::size_t bytes) override {
    ++uploads;
    ra::host_memory().copy(d, s, bytes);
  }
  void download(void* d, const void* s, std::size_t bytes) override {
    ++downloads;
    ra::host_memory().copy(d, s, bytes);
  }
  void download_all(std::span<const ra::Download> regions) override {
    ++download_batches;
    for (const ra::Download& r : regions) download(r.host_dst, r.src, r.bytes);
  }
};

}  // namespace ra::test
