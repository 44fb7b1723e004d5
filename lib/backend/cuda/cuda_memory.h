#pragma once
// Device memory for tensors and buffers of the CUDA backend (core/memory.h). One object for the
// process (device 0), like host_memory().
//
// Ordering: allocation, zeroing and copies use the plain runtime calls (cudaMemset, cudaMemcpy),
// which run on the legacy default stream. CudaOps queues its work on a stream created WITHOUT
// cudaStreamNonBlocking, and the legacy stream synchronizes with such streams both ways, so a
// zero or copy here is ordered after the kernels queued before it and before those queued after,
// with neither side knowing the other.
#include "core/memory.h"

namespace ra::backend::cuda {

Memory& cuda_device_memory();

}  // namespace ra::backend::cuda
