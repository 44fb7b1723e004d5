#pragma once
// Move-only RAII owners of CUDA, cuDNN and cuBLAS objects (the cudnn-frontend pattern): the
// constructor creates the object or throws CudaError; the destructor is noexcept and never throws
// (a failing destroy during unwinding must not terminate the process: its status is dropped).
// A moved-from owner holds nothing and destroys nothing.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <utility>

namespace ra::backend::cuda {

// Owns one handle of type H released by `Release`; the base of the types below.
template <class H, auto Release>
class UniqueHandle {
 public:
  UniqueHandle() noexcept = default;
  explicit UniqueHandle(H handle) noexcept : handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, H{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, H{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  H get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != H{}; }

 protected:
  void reset() noexcept {
    if (handle_ != H{}) static_cast<void>(Release(handle_));
    handle_ = H{};
  }

 private:
  H handle_{};
};

// Device memory from cudaMalloc. reserve() only grows: steady-state training never allocates.
class DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;
  explicit DeviceBuffer(std::size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const noexcept { return data_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  std::size_t size() const noexcept { return bytes_; }
  // Ensures size() >= bytes. Growing frees the old block first and does NOT keep its contents
  // (callers use buffers as scratch). Freeing waits for the device first (release()), so work
  // already queued that uses the old block finishes before it is freed.
  void reserve(std::size_t bytes);

 private:
  void release() noexcept;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// The stream a CudaOps queues everything on: kernels, cuDNN and cuBLAS (their handles are set to
// it) and the zeros and copies of its DeviceMemory (cuda_memory.h). Ordering comes from that one
// stream alone; it is created with cudaStreamDefault flags, but nothing relies on its implicit
// synchronization with the legacy default stream any more.
class Stream : public UniqueHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  Stream();
  void synchronize() const;
};

// A CUDA event with timing (cudaEventDefault flags): a marker in a stream whose device time
// cudaEventElapsedTime reads (event_timer.h).
class Event : public UniqueHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  Event();
};

// A captured CUDA graph (cudaStreamEndCapture's), and its instantiation, which is what runs
// (cudaGraphLaunch); the exec does not need the graph it came from.
class Graph : public UniqueHandle<cudaGraph_t, cudaGraphDestroy> {
 public:
  using UniqueHandle::UniqueHandle;
};
class GraphExec : public UniqueHandle<cudaGraphExec_t, cudaGraphExecDestroy> {
 public:
  using UniqueHandle::UniqueHandle;
};

class CudnnHandle : public UniqueHandle<cudnnHandle_t, cudnnDestroy> {
 public:
  explicit CudnnHandle(cudaStream_t stream);
};

class CublasHandle : public UniqueHandle<cublasHandle_t, cublasDestroy> {
 public:
  explicit CublasHandle(cudaStream_t stream);
};

// 4-D NCHW float tensor.
class TensorDescriptor
    : public UniqueHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> {
 public:
  TensorDescriptor(int n, int c, int h, int w);
};

// K x C x R x S float filter (PyTorch conv weight layout).
class FilterDescriptor
    : public UniqueHandle<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor> {
 public:
  FilterDescriptor(int k, int c, int r, int s);
};

// 2-D cross-correlation (what PyTorch and Keras call convolution), fp32 compute. The math type is
// left at cuDNN's default: its owner (ConvPlan) sets the policy's before any use. cuDNN accepts
// only SYMMETRIC padding
// (one pad per dimension); asymmetric padding is handled by the caller (conv_plan.h: the input
// is copied into a tensor padded by the difference, the symmetric part stays with cuDNN).
class ConvolutionDescriptor
    : public UniqueHandle<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor> {
 public:
  ConvolutionDescriptor(int pad_h, int pad_w, int stride_h, int stride_w);
};

}  // namespace ra::backend::cuda
