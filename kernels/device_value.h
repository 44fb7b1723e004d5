#pragma once
// An argument a kernel reads from device memory when it runs, rather than one fixed at launch: a
// step's dropout draw and optimizer rule, so that a training step captured as a CUDA graph reads
// each replay's values (backend/cuda/step_scalars.h). Host and device code.
namespace ra::kernels {

template <class T>
struct DeviceValue {
  const T* at = nullptr;  // device memory, valid until the kernel has run
};

}  // namespace ra::kernels
