#pragma once
// Global average pooling over x[N, C, H, W] -> y[N, C] (backend/geometry.h: ChannelGeometry).
//
//   global_avgpool_forward   y[plane] = sum of the plane / (H*W) ('='): one thread per plane,
//                            the sum in 16 lanes (lane l adds elements l mod 16 in order) halved
//                            in the tree l + 8, l + 4, l + 2, l + 1: the CPU's order
//                            (backend/cpu/norm/channel_lanes.h), compiled without FMA
//                            contraction, so the CPU's bits. No atomics: no mode.
//   global_avgpool_backward  dx[plane, i] = dy[plane] / (H*W) ('='): one thread per element.
#include <cuda_runtime_api.h>

#include "backend/geometry.h"

namespace ra::kernels {

void global_avgpool_forward(cudaStream_t stream, const ra::backend::ChannelGeometry& g,
                            const float* x, float* y);
void global_avgpool_backward(cudaStream_t stream, const ra::backend::ChannelGeometry& g,
                             const float* dy, float* dx);

}  // namespace ra::kernels
