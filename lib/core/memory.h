#pragma once
// Where a backend's buffers live. The CPU backend uses host memory; the CUDA backend device
// memory. Tensors and buffers allocate through a Memory, so the model, its activations and its
// gradients live where the backend computes, and move to the host only when asked (snapshots,
// evaluation metrics), never silently.
#include <cstddef>
#include <span>

namespace ra {

// One region of a Memory to copy into host memory (Memory::download_all).
struct Download {
  void* host_dst = nullptr;
  const void* src = nullptr;
  std::size_t bytes = 0;
};

class Memory {
 public:
  virtual ~Memory() = default;
  // True when the host can dereference the memory (host memory).
  virtual bool host_accessible() const noexcept = 0;
  virtual const char* name() const noexcept = 0;  // "host", "cuda"
  // 64-byte aligned; throws std::bad_alloc or ra::RuntimeFailure.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p) noexcept = 0;
  virtual void zero(void* p, std::size_t bytes) = 0;
  // Within this memory: ordered with the backend's work, not necessarily complete on return (a
  // device memory queues it, like zero(), on its stream: the ops and copies after it see the
  // result, and so does the host through download()). Between this memory and the host
  // (upload, download): complete before returning.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  // Every download, complete on return. The default makes them one by one; a device memory
  // queues them all and waits once (a weight snapshot: one wait per snapshot, not per tensor).
  virtual void download_all(std::span<const Download> downloads) {
    for (const Download& d : downloads) download(d.host_dst, d.src, d.bytes);
  }
};

// The process's host memory (a static object).
Memory& host_memory();

}  // namespace ra
