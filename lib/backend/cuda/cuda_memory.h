#pragma once
// Device memory for tensors and buffers of the CUDA backend (core/memory.h), bound to the stream
// its owner's ops are queued on. Each CudaOps owns one (CudaOps::memory()); tensors allocated
// through it must not outlive that CudaOps (the trainer destroys its model before its ops).
//
// Ordering: every zero and copy is queued on that stream (cudaMemsetAsync, cudaMemcpyAsync), so it
// runs after the kernels queued before it and before those queued after, by stream order alone:
// nothing depends on the legacy default stream's implicit synchronization, which a per-thread
// default stream (--default-stream per-thread) or a non-blocking stream would not give. Uploads
// and downloads then wait for that stream, as the interface promises them complete on return;
// zeros and device-to-device copies do not.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "core/memory.h"

namespace ra::backend::cuda {

class DeviceMemory final : public Memory {
 public:
  // `stream` must outlive this object (CudaOps declares its stream first).
  explicit DeviceMemory(cudaStream_t stream) noexcept : stream_(stream) {}
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  bool host_accessible() const noexcept override { return false; }
  const char* name() const noexcept override { return "cuda"; }
  cudaStream_t stream() const noexcept { return stream_; }

  // cudaMalloc aligns to at least 256 bytes, more than the 64 the interface promises.
  void* allocate(std::size_t bytes) override;
  // Waits for the stream first: cudaFree only "may" synchronize (cuda_runtime_api.h), and work
  // queued before may still read the block.
  void deallocate(void* p) noexcept override;
  void zero(void* p, std::size_t bytes) override;  // queued; later work on the stream sees zeros
  void copy(void* dst, const void* src, std::size_t bytes) override;  // queued, likewise
  void upload(void* dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* src, std::size_t bytes) override;
  // Every download queued on the stream, then one wait.
  void download_all(std::span<const Download> downloads) override;
  // Inside a replayed step (CudaOps::begin_step) its graph holds the step's zeros and copies:
  // they are skipped; an upload or download there is a std::logic_error (it would not be
  // ordered with the graph's work).
  void set_replaying(bool replaying) noexcept { replaying_ = replaying; }

 private:
  cudaStream_t stream_;
  bool replaying_ = false;
};

// Page-locked host memory (cudaHostAlloc, cudaFreeHost): host-accessible, and what a download
// from device memory reaches by DMA alone, where pageable memory goes through a bounce buffer.
// Where weight snapshots stage their copies (Ops::staging_memory). One process-wide object
// (pinned_host_memory()), bound to no stream: its copies are host memcpy's.
class PinnedHostMemory final : public Memory {
 public:
  bool host_accessible() const noexcept override { return true; }
  const char* name() const noexcept override { return "cuda-pinned"; }
  // cudaHostAlloc aligns to a page, more than the 64 bytes the interface promises.
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void zero(void* p, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void upload(void* dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* src, std::size_t bytes) override;
};

PinnedHostMemory& pinned_host_memory();

// One value in page-locked host memory, owned: what the device copies a result back into with a
// step's other work (cudaMemcpyAsync into pageable memory would wait), for the host to read once
// the stream has finished. Value-initialised.
template <class T>
class PinnedHostValue {
 public:
  PinnedHostValue() : value_(static_cast<T*>(pinned_host_memory().allocate(sizeof(T)))) {
    *value_ = T{};
  }
  PinnedHostValue(const PinnedHostValue&) = delete;
  PinnedHostValue& operator=(const PinnedHostValue&) = delete;
  ~PinnedHostValue() { pinned_host_memory().deallocate(value_); }
  T* get() const noexcept { return value_; }

 private:
  T* value_;
};

// A block of page-locked host memory, owned and move-only, that the device copies results into
// while the host goes on (deferred_digests.h). Replacing or destroying it while a copy into it is
// still queued is the owner's to prevent (it waits for the stream first).
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() noexcept = default;
  explicit PinnedHostBuffer(std::size_t bytes)
      : data_(pinned_host_memory().allocate(bytes)), bytes_(bytes) {}
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept {
    if (this != &other) {
      pinned_host_memory().deallocate(data_);
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;
  ~PinnedHostBuffer() { pinned_host_memory().deallocate(data_); }

  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  std::size_t size() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace ra::backend::cuda
