// Losses, averaged over the batch. The batch sum is a reduction: rows are cut into fixed chunks
// (reduce_chunks); within a chunk rows are added in order. Gradients are per row (one writer).
#include <cmath>
#include <string>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reduce/reduction.h"
#include "core/error.h"

namespace ra::backend::cpu {
namespace {

void check_batch(const char* op, int n, int classes, const std::int32_t* labels) {
  if (n < 1 || classes < 1) {
    throw InputError(std::string(op) + ": need at least one sample and one class, got n = " +
                     std::to_string(n) + ", classes = " + std::to_string(classes));
  }
  for (int i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      throw InputError(std::string(op) + ": label " + std::to_string(labels[i]) + " of sample " +
                       std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
    }
  }
}

// -log softmax(row)[label]; grad (when not null) = (softmax - onehot) / batch.
float cross_entropy_row(int classes, const float* row, int label, float batch, float* grad) {
  // Shift by the row maximum so that exp never overflows: every shifted logit is <= 0.
  float max = row[0];
  for (int j = 1; j < classes; ++j) max = row[j] > max ? row[j] : max;
  float sum = 0.0f;
  for (int j = 0; j < classes; ++j) {
    const float e = std::exp(row[j] - max);
    if (grad != nullptr) grad[j] = e;
    sum += e;
  }
  if (grad != nullptr) {
    for (int j = 0; j < classes; ++j)
      grad[j] = (grad[j] / sum - (j == label ? 1.0f : 0.0f)) / batch;
  }
  // logsumexp - logit[label] = log(sum) - (logit[label] - max): written with the same shifted
  // logit that exp saw, which avoids cancelling two large numbers (max + log(sum) - logit).
  return std::log(sum) - (row[label] - max);
}

// Sum over the row of (pred - onehot)^2; grad (when not null) = 2 (pred - onehot) / count.
float squared_error_row(int classes, const float* row, int label, float count, float* grad) {
  float sum = 0.0f;
  for (int j = 0; j < classes; ++j) {
    const float diff = row[j] - (j == label ? 1.0f : 0.0f);
    sum += diff * diff;
    if (grad != nullptr) grad[j] = 2.0f * diff / count;
  }
  return sum;
}

}  // namespace

float CpuOps::softmax_cross_entropy(int n, int classes, const float* logits,
                                    const std::int32_t* labels, float* dlogits, KernelMode mode) {
  check_batch("softmax_cross_entropy", n, classes, labels);
  const cpu::ChunkPlan plan = cpu::plan_chunks(n, 1);
  const float batch = static_cast<float>(n);
  float total = 0.0f;
  cpu::reduce_chunks(
      pool_, scratch_, mode, plan.chunks, 1, &total, [&](std::int64_t chunk, float* partial, int) {
        for (std::int64_t i = plan.begin(chunk); i < plan.end(chunk); ++i) {
          partial[0] += cross_entropy_row(classes, logits + i * classes, labels[i], batch,
                                          dlogits != nullptr ? dlogits + i * classes : nullptr);
        }
      });
  return total / batch;
}

float CpuOps::mean_squared_error(int n, int classes, const float* pred, const std::int32_t* labels,
                                 float* dpred, KernelMode mode) {
  check_batch("mean_squared_error", n, classes, labels);
  const cpu::ChunkPlan plan = cpu::plan_chunks(n, 1);
  const float count = static_cast<float>(std::int64_t(n) * classes);
  float total = 0.0f;
  cpu::reduce_chunks(
      pool_, scratch_, mode, plan.chunks, 1, &total, [&](std::int64_t chunk, float* partial, int) {
        for (std::int64_t i = plan.begin(chunk); i < plan.end(chunk); ++i) {
          partial[0] += squared_error_row(classes, pred + i * classes, labels[i], count,
                                          dpred != nullptr ? dpred + i * classes : nullptr);
        }
      });
  return total / count;
}

}  // namespace ra::backend::cpu
