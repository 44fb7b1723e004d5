// Losses: rows [n, classes] -> one mean loss (device float, '=') and optional per-row gradients
// ('=', one writer per row). One thread per row; per row the fp32 operations are the CPU's
// (lib/backend/cpu/cpu_loss.cpp) in the same order, so rows differ from the CPU only by CUDA's
// expf / logf ulps (cross-entropy) or not at all (squared error).
//
// Batch sum, two passes:
//   1. deterministic: row_blocks(n) blocks; thread t of block b adds rows b*256 + t, then + grid
//      stride, in order; block_sum's fixed tree gives the block partial; partials[b] = partial
//      (workspace, one writer each).
//      nondeterministic: loss_atomic_slices(n) blocks (kernels/reduction_split.h: at least
//      min(n, 8), so a batch of 128 rows is 8 blocks of 16); block b sums the contiguous slice b
//      of the rows (thread t: rows begin + t, + 256, ...; then block_sum) and atomicAdds its
//      partial into partials[0], zeroed first. With 3 or more slices the order, hence the bits,
//      may vary from run to run.
//   2. one block: deterministic - thread t adds partials t, t + 256, ... in order, then the fixed
//      tree; nondeterministic - partials[0]. *loss_out = total / divisor (n, or n * classes).
// The grid depends on n only, so the deterministic tree is the same on every run and device.
#include "core/integer_math.h"
#include "kernels/fill.cuh"
#include "kernels/launch_config.cuh"
#include "kernels/loss.cuh"
#include "kernels/reduction_split.h"

namespace ra::kernels {
namespace {

// At most 1024 partials (4 KiB of workspace); a batch above 256 Ki rows loops in each thread.
constexpr std::int64_t kMaxRowBlocks = 1024;

unsigned row_blocks(int n) {
  const std::int64_t blocks = ra::ceil_div(std::int64_t(n), detail::kThreads);
  return static_cast<unsigned>(blocks < kMaxRowBlocks ? blocks : kMaxRowBlocks);
}

// -log softmax(row)[label]; grad (when not null) = (softmax - onehot) / batch.
struct CrossEntropyRow {
  float batch;
  __device__ float operator()(int classes, const float* row, int label, float* grad) const {
    // Shift by the row maximum so that expf never overflows: every shifted logit is <= 0.
    float max = row[0];
    for (int j = 1; j < classes; ++j) max = row[j] > max ? row[j] : max;
    float sum = 0.0f;
    for (int j = 0; j < classes; ++j) {
      const float e = expf(row[j] - max);
      if (grad != nullptr) grad[j] = e;
      sum += e;
    }
    if (grad != nullptr) {
      for (int j = 0; j < classes; ++j)
        grad[j] = (grad[j] / sum - (j == label ? 1.0f : 0.0f)) / batch;
    }
    // log(sum) - (logit[label] - max): the shifted logit that expf saw, no large cancellation.
    return logf(sum) - (row[label] - max);
  }
};

// Sum over the row of (pred - onehot)^2; grad (when not null) = 2 (pred - onehot) / count.
struct SquaredErrorRow {
  float count;
  __device__ float operator()(int classes, const float* row, int label, float* grad) const {
    float sum = 0.0f;
    for (int j = 0; j < classes; ++j) {
      const float diff = row[j] - (j == label ? 1.0f : 0.0f);
      sum += diff * diff;
      if (grad != nullptr) grad[j] = 2.0f * diff / count;
    }
    return sum;
  }
};

// This thread's sum of the losses of rows first, first + stride, ... below end, in order (and
// their gradients). A bad label adds nothing and zeroes its gradient row.
template <class Row>
__device__ __forceinline__ float thread_rows_sum(Row row_loss, int classes, const float* rows,
                                                 const std::int32_t* labels, float* grad,
                                                 int* bad_label_flag, std::int64_t first,
                                                 std::int64_t end, std::int64_t stride) {
  float sum = 0.0f;
  for (std::int64_t i = first; i < end; i += stride) {
    const std::int32_t label = labels[i];
    float* grad_row = grad != nullptr ? grad + i * classes : nullptr;
    if (label < 0 || label >= classes) {
      *bad_label_flag = 1;  // every writer stores the same value: no race on the result
      if (grad_row != nullptr) {
        for (int j = 0; j < classes; ++j) grad_row[j] = 0.0f;
      }
      continue;
    }
    sum += row_loss(classes, rows + i * classes, label, grad_row);
  }
  return sum;
}

// Deterministic: grid-stride rows, partials[blockIdx.x] = the block's partial.
template <class Row>
__global__ void loss_rows_kernel(Row row_loss, int n, int classes, const float* rows,
                                 const std::int32_t* labels, float* grad, float* partials,
                                 int* bad_label_flag) {
  __shared__ float scratch[detail::kThreads];
  const float sum = thread_rows_sum(row_loss, classes, rows, labels, grad, bad_label_flag,
                                    detail::grid_first(), n, detail::grid_stride());
  const float partial = detail::block_sum(sum, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = partial;
}

// Nondeterministic: block b sums slice b of `slices` contiguous row slices and atomicAdds its
// partial into partials[0].
template <class Row>
__global__ void loss_rows_atomic_kernel(Row row_loss, int n, int classes, const float* rows,
                                        const std::int32_t* labels, float* grad, int slices,
                                        float* partials, int* bad_label_flag) {
  __shared__ float scratch[detail::kThreads];
  const std::int64_t begin = slice_begin(n, slices, blockIdx.x);
  const std::int64_t end = slice_begin(n, slices, blockIdx.x + 1);
  const float sum = thread_rows_sum(row_loss, classes, rows, labels, grad, bad_label_flag,
                                    begin + threadIdx.x, end, blockDim.x);
  const float partial = detail::block_sum(sum, scratch);
  if (threadIdx.x == 0) atomicAdd(partials, partial);
}

// One block: *loss_out = (sum of the `count` partials in a fixed order) / divisor.
__global__ void loss_finish_kernel(const float* partials, int count, float divisor,
                                   float* loss_out) {
  __shared__ float scratch[detail::kThreads];
  float sum = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  const float total = detail::block_sum(sum, scratch);
  if (threadIdx.x == 0) *loss_out = total / divisor;
}

template <class Row>
void batch_loss(cudaStream_t stream, Row row_loss, float divisor, int n, int classes,
                const float* rows, const std::int32_t* labels, float* grad, float* loss_out,
                bool deterministic, void* workspace, int* bad_label_flag) {
  if (n < 1 || classes < 1) return;
  float* partials = static_cast<float*>(workspace);
  if (deterministic) {
    const unsigned blocks = row_blocks(n);
    loss_rows_kernel<<<blocks, detail::kThreads, 0, stream>>>(row_loss, n, classes, rows, labels,
                                                              grad, partials, bad_label_flag);
    loss_finish_kernel<<<1, detail::kThreads, 0, stream>>>(partials, static_cast<int>(blocks),
                                                           divisor, loss_out);
    return;
  }
  const int slices = loss_atomic_slices(n);
  fill(stream, partials, 1, 0.0f);
  loss_rows_atomic_kernel<<<static_cast<unsigned>(slices), detail::kThreads, 0, stream>>>(
      row_loss, n, classes, rows, labels, grad, slices, partials, bad_label_flag);
  loss_finish_kernel<<<1, detail::kThreads, 0, stream>>>(partials, 1, divisor, loss_out);
}

}  // namespace

std::size_t loss_workspace_bytes(int n, int) {
  const unsigned blocks = n > 0 ? row_blocks(n) : 1;
  return sizeof(float) * blocks;
}

void softmax_cross_entropy(cudaStream_t stream, int n, int classes, const float* logits,
                           const std::int32_t* labels, float* dlogits, float* loss_out,
                           bool deterministic, void* workspace, int* bad_label_flag) {
  const float batch = static_cast<float>(n);
  batch_loss(stream, CrossEntropyRow{batch}, batch, n, classes, logits, labels, dlogits, loss_out,
             deterministic, workspace, bad_label_flag);
}

void mean_squared_error(cudaStream_t stream, int n, int classes, const float* pred,
                        const std::int32_t* labels, float* dpred, float* loss_out,
                        bool deterministic, void* workspace, int* bad_label_flag) {
  const float count = static_cast<float>(std::int64_t(n) * classes);
  batch_loss(stream, SquaredErrorRow{count}, count, n, classes, pred, labels, dpred, loss_out,
             deterministic, workspace, bad_label_flag);
}

}  // namespace ra::kernels
