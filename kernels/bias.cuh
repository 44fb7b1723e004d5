#pragma once
// Bias of conv2d and dense layers. Layout y[n, k, spatial] with spatial = P * Q for conv2d and
// spatial = 1 for dense (y[n, out]).
//
//   bias_add       y[n,k,s] += bias[k]                       ('+=', one writer: deterministic)
//   bias_backward  db[k] = sum over n, s of dy[n,k,s]        ('=', a reduction)
//       deterministic    one block per k sums its n * spatial items by a fixed tree (each thread
//                        adds items t, t + 256, ... in order, then a fixed tree over threads):
//                        the same bits on every run and device. No float atomics.
//       nondeterministic db = 0, then bias_atomic_slices(n * spatial) blocks per channel
//                        (kernels/reduction_split.h: at least min(n * spatial, 8)) each sum one
//                        contiguous, non-empty slice of (n, s) and atomicAdd their partial into
//                        db[k] in completion order: with 3 or more slices (n * spatial >= 3) the
//                        bits may differ from run to run; with 1 or 2 they cannot (two partials
//                        added into 0 commute exactly).
#include <cuda_runtime_api.h>

#include <cstddef>

namespace ra::kernels {

void bias_add(cudaStream_t stream, float* y, const float* bias, int n, int k, int spatial);

// Device scratch bias_backward needs (0 today: neither mode keeps partials in memory; the
// parameter stays so that a split reduction can use it without changing callers).
std::size_t bias_backward_workspace_bytes(int n, int k, int spatial);

void bias_backward(cudaStream_t stream, const float* dy, float* db, int n, int k, int spatial,
                   bool deterministic, void* workspace);

}  // namespace ra::kernels
