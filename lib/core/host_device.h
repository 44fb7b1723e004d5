#pragma once
// RA_HOST_DEVICE marks a header-only function that both the CPU code and kernels/*.cu compile:
// the same source, so the same arithmetic and the same bits on either side. Free of the standard
// library so that device code can include it.
#if defined(__CUDACC__)
#define RA_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define RA_HOST_DEVICE inline
#endif
