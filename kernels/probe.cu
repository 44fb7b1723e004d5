// probe: a kernel that does nothing, compiled for the same architectures as every other kernel,
// so that whether the device can run it is whether it can run this build's kernels.
#include "kernels/probe.cuh"

namespace ra::kernels {
namespace {

__global__ void probe_kernel() {}

}  // namespace

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attributes{};
  // cuda_runtime_api.h: cudaFuncGetAttributes(struct cudaFuncAttributes*, const void* func).
  const cudaError_t status =
      cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&probe_kernel));
  // Only after a failure (see the header): a success sets nothing, and clearing then could hide a
  // pending error of someone else's launch.
  if (status != cudaSuccess) static_cast<void>(cudaGetLastError());
  return status;
}

}  // namespace ra::kernels
