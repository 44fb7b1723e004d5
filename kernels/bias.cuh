#pragma once
// Bias of conv2d and dense layers. Layout y[n, k, spatial] with spatial = P * Q for conv2d and
// spatial = 1 for dense (y[n, out]).
//
//   bias_add       y[n,k,s] += bias[k]                       ('+=', one writer: deterministic)
//   bias_backward  db[k] = sum over n, s of dy[n,k,s]        ('=', a reduction)
//       deterministic    the n * spatial items of each channel are cut into
//                        bias_fixed_slices(n * spatial) contiguous slices (kernels/
//                        reduction_split.h: from the item count alone, about 2048 items each,
//                        at most 64). One slice: one block per k sums its items by a fixed tree
//                        (each thread adds items t, t + 256, ... in order, then a fixed tree over
//                        threads). More: pass 1 runs one block per (slice, channel), each writing
//                        its slice's fixed-tree sum into workspace partials[k][slices]; pass 2
//                        adds each channel's partials in slice order, one thread per channel.
//                        Either way the same bits on every run and device. No float atomics.
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

// Device scratch bias_backward needs in a mode: the deterministic two-pass path's partials
// (k x bias_fixed_slices(n * spatial) floats when there are 2 or more slices), else 0.
std::size_t bias_backward_workspace_bytes(int n, int k, int spatial, bool deterministic);

void bias_backward(cudaStream_t stream, const float* dy, float* db, int n, int k, int spatial,
                   bool deterministic, void* workspace);

}  // namespace ra::kernels
