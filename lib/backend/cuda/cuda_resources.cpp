#include "backend/cuda/cuda_resources.h"

#include "backend/cuda/cuda_check.h"

namespace ra::backend::cuda {

// ---- DeviceBuffer ----

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  reserve(bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

void DeviceBuffer::release() noexcept {
  if (data_ != nullptr) {
    // cudaFree only "may perform implicit synchronization" (cuda_runtime_api.h), and the buffer
    // does not know which stream uses it: wait for the whole device, then free. Buffers only grow
    // (a few times in a run's first step) and die at the end, so this costs nothing in steady
    // state. A status here is an earlier fault, reported by the next checked call.
    static_cast<void>(cudaDeviceSynchronize());
    static_cast<void>(cudaFree(data_));
  }
  data_ = nullptr;
  bytes_ = 0;
}

void DeviceBuffer::reserve(std::size_t bytes) {
  if (bytes <= bytes_) return;
  // Free first: old and new blocks never coexist, so growing needs no more than the new size.
  release();
  void* p = nullptr;
  RA_CUDA_CHECK(cudaMalloc(&p, bytes));
  data_ = p;
  bytes_ = bytes;
}

// ---- Stream and library handles ----
// Like the descriptors below: created, then owned (so a failing call after it destroys it).

Stream::Stream() {
  cudaStream_t s = nullptr;
  RA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamDefault));
  UniqueHandle::operator=(UniqueHandle(s));
}

void Stream::synchronize() const {
  RA_CUDA_CHECK(cudaStreamSynchronize(get()));
}

Event::Event() {
  cudaEvent_t e = nullptr;
  RA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
  UniqueHandle::operator=(UniqueHandle(e));
}

CudnnHandle::CudnnHandle(cudaStream_t stream) {
  cudnnHandle_t h = nullptr;
  RA_CUDNN_CHECK(cudnnCreate(&h));
  UniqueHandle::operator=(UniqueHandle(h));
  RA_CUDNN_CHECK(cudnnSetStream(get(), stream));
}

CublasHandle::CublasHandle(cudaStream_t stream) {
  cublasHandle_t h = nullptr;
  RA_CUBLAS_CHECK(cublasCreate(&h));
  UniqueHandle::operator=(UniqueHandle(h));
  RA_CUBLAS_CHECK(cublasSetStream(get(), stream));
}

// ---- cuDNN descriptors ----
// Each is created, then owned (so a failing Set* call below destroys it), then set.

TensorDescriptor::TensorDescriptor(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t d = nullptr;
  RA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
  UniqueHandle::operator=(UniqueHandle(d));
  RA_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
}

FilterDescriptor::FilterDescriptor(int k, int c, int r, int s) {
  cudnnFilterDescriptor_t d = nullptr;
  RA_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d));
  UniqueHandle::operator=(UniqueHandle(d));
  RA_CUDNN_CHECK(
      cudnnSetFilter4dDescriptor(get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, s));
}

ConvolutionDescriptor::ConvolutionDescriptor(int pad_h, int pad_w, int stride_h, int stride_w) {
  cudnnConvolutionDescriptor_t d = nullptr;
  RA_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d));
  UniqueHandle::operator=(UniqueHandle(d));
  RA_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(get(), pad_h, pad_w, stride_h, stride_w,
                                                 /*dilation*/ 1, 1, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT));
}

}  // namespace ra::backend::cuda
