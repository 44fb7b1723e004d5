#pragma once
// Losses over a batch: logits / pred [n, classes], labels [n] (int32), both averaged over the
// batch.
//
//   softmax_cross_entropy  *loss_out = mean_n(-log softmax(logits[n])[label[n]])   ('=')
//                          dlogits = (softmax - onehot) / n                        ('=', if not
//                          null)
//   mean_squared_error     *loss_out = mean over n*classes of (pred - onehot)^2    ('=')
//                          dpred = 2 (pred - onehot) / (n*classes)                 ('=', if not
//                          null)
//
// loss_out is one device float. Gradients are per row (one writer each). The batch sum reduces:
//   deterministic    every block writes its partial to workspace, then one block adds the
//                    partials in index order with a fixed tree: the same bits on every run (not
//                    necessarily the CPU's bits: its chunks differ).
//   nondeterministic loss_atomic_slices(n) blocks (kernels/reduction_split.h: at least min(n,
//                    8)) each sum a contiguous slice of the rows and atomicAdd their partial
//                    (completion order): with n >= 3 the bits may vary; with n <= 2 they cannot
//                    (two partials added into 0 commute exactly).
// workspace: loss_workspace_bytes(n, classes) bytes of device scratch.
// Labels outside [0, classes) set *bad_label_flag = 1 (a device int the kernel never clears: the
// caller zeroes it beforehand and reads it after), contribute 0 to the sum and a 0 gradient row.
// Preconditions (checked by the caller, as the CPU does): n >= 1, classes >= 1; otherwise nothing
// is launched.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ra::kernels {

std::size_t loss_workspace_bytes(int n, int classes);

void softmax_cross_entropy(cudaStream_t stream, int n, int classes, const float* logits,
                           const std::int32_t* labels, float* dlogits, float* loss_out,
                           bool deterministic, void* workspace, int* bad_label_flag);
void mean_squared_error(cudaStream_t stream, int n, int classes, const float* pred,
                        const std::int32_t* labels, float* dpred, float* loss_out,
                        bool deterministic, void* workspace, int* bad_label_flag);

}  // namespace ra::kernels
