#pragma once
// Whether this build holds kernel code the current device can run: a GPU the driver and cuDNN
// accept is still unusable when the binary has neither machine code (SASS) for its architecture
// nor PTX the driver can compile for it. Asked once by backend/cuda/device.cpp (query_device).
#include <cuda_runtime_api.h>

namespace ra::kernels {

// cudaFuncGetAttributes of a trivial kernel of this library, on the current device:
// cudaSuccess when it can run; cudaErrorInvalidDeviceFunction or cudaErrorNoKernelImageForDevice
// when the build has no code for the device; any other status when the query itself failed. After
// a failure the runtime's last-error slot is cleared (a failed probe must not surface later as the
// error of an unrelated cudaGetLastError check).
cudaError_t probe_kernel_image();

}  // namespace ra::kernels
