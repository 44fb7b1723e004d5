#pragma once
// maxpool2d over x[N, C, H, W] -> y[N, C, P, Q] (backend/geometry.h: PoolGeometry), with argmax.
// Custom kernels rather than cuDNN pooling so that argmax and ties match the CPU backend bit for
// bit.
//
//   maxpool_forward   y = max over each window, argmax = flat index into x of the winner ('=').
//                     Same rule as the CPU: candidates in row-major window order, strict '>' so
//                     the first maximum wins ties, padded cells never win, a window of padding
//                     only gives -inf and argmax -1. One writer per output: bit-identical to the
//                     CPU. Requires x_size() <= INT32_MAX (the caller checks, as the CPU does).
//   maxpool_backward  dx = 0, then dx[argmax[i]] += g(i)                          ('=')
//                     g(i) = dy[i] when gate is nullptr or gate[i] > 0, else 0.0f: the relu
//                     backward of the layer before (gate = its output, y[N, C, P, Q]'s shape),
//                     fused so that no gated copy of dy is written. 0.0f is still added, so the
//                     sums are those of gating first and pooling after.
//       deterministic    no atomics, each dx element written once (kernels/maxpool_backward.h):
//                        disjoint windows (stride >= pool): one thread per output writes the
//                        block of dx it owns (its dy at argmax, zeros around it); overlapping
//                        windows: one thread per dx element gathers the dy of the windows that
//                        contain it and chose it, in increasing output order starting from 0.0f.
//                        Either way the order in which the CPU's deterministic scatter adds them,
//                        hence the CPU's bits. Requires y_size() <= INT32_MAX too.
//       nondeterministic dx = 0, then one thread per output atomicAdds dy into dx[argmax]:
//                        overlapping windows (stride < pool) add in completion order.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/geometry.h"

namespace ra::kernels {

void maxpool_forward(cudaStream_t stream, const ra::backend::PoolGeometry& g, const float* x,
                     float* y, std::int32_t* argmax);
void maxpool_backward(cudaStream_t stream, const ra::backend::PoolGeometry& g, const float* dy,
                      const float* gate, const std::int32_t* argmax, float* dx, bool deterministic);

}  // namespace ra::kernels
