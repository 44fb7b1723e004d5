#include "backend/cuda/step_scalars.h"

#include <cstring>
#include <string>

#include "backend/cuda/cuda_check.h"

namespace ra::backend::cuda {
namespace {

// Each slot starts on a 16-byte boundary: any scalar type or rule struct reads aligned.
constexpr std::size_t kSlotAlign = 16;

std::size_t aligned(std::size_t bytes) {
  return (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
}

}  // namespace

void StepScalars::FreePinned::operator()(void* p) const noexcept {
  if (p != nullptr) static_cast<void>(cudaFreeHost(p));
}

void StepScalars::reserve(cudaStream_t stream, std::size_t bytes) {
  if (bytes <= capacity_) return;
  // A graph captured with the old slots reads them no more once the stream has drained; the
  // graph itself is captured anew (its call print names the slots' address).
  RA_CUDA_CHECK(cudaStreamSynchronize(stream));
  void* p = nullptr;
  RA_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  std::unique_ptr<void, FreePinned> host(p);
  DeviceBuffer device(bytes);
  host_ = std::move(host);
  device_ = std::move(device);
  capacity_ = bytes;
}

void StepScalars::note(std::size_t bytes) noexcept {
  used_ += aligned(bytes);
}

const void* StepScalars::put(cudaStream_t stream, const void* value, std::size_t bytes,
                             bool queue_copy) {
  const std::size_t slot = aligned(bytes);
  if (used_ + slot > capacity_) {
    throw CudaError("a graph step's arguments outgrew their " + std::to_string(capacity_) +
                    "-byte buffer, which cannot grow inside a stream capture");
  }
  auto* host = static_cast<unsigned char*>(host_.get()) + used_;
  auto* device = static_cast<unsigned char*>(device_.data()) + used_;
  std::memcpy(host, value, bytes);
  if (queue_copy) {
    RA_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
  }
  used_ += slot;
  return device;
}

}  // namespace ra::backend::cuda
