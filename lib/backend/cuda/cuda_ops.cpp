// CudaOps: construction, memory, ledger, and the ops served by the custom kernels (pooling,
// activations, dropout, optimizer, losses). Convolutions: cuda_conv.cpp; dense: cuda_dense.cpp.
#include "backend/cuda/cuda_ops.h"

#include <limits>

#include "backend/cuda/algorithm_policy.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/device.h"
#include "backend/cuda/event_timer.h"
#include "backend/cuda/split_plan.h"
#include "core/error.h"
#include "kernels/activation.cuh"
#include "kernels/dropout.cuh"
#include "kernels/loss.cuh"
#include "kernels/maxpool.cuh"
#include "kernels/optimizer.cuh"

namespace ra::backend::cuda {
namespace {

using cuda::CudaError;

// cuBLAS's recommended workspace on Hopper is 32 MiB (4 MiB before); giving cuBLAS its own
// workspace, rather than its internal pool, keeps sgemm's bits independent of other streams
// (cuBLAS docs, "Results reproducibility").
constexpr std::size_t kCublasWorkspaceBytes = std::size_t(32) << 20;

// Runs before any member is built, so that a machine without a GPU fails with the reason rather
// than with the first CUDA call that happens to fail.
KernelMode require_usable_device(KernelMode mode) {
  const cuda::DeviceInfo info = cuda::query_device();
  if (!info.usable) throw CudaError("CUDA backend: no usable GPU: " + info.reason);
  RA_CUDA_CHECK(cudaSetDevice(0));
  return mode;
}

}  // namespace

CudaOps::CudaOps(KernelMode forward_mode)
    : forward_mode_(require_usable_device(forward_mode)),
      stream_(),
      memory_(stream_.get()),
      cudnn_(stream_.get()),
      cublas_workspace_(kCublasWorkspaceBytes),
      cublas_(stream_.get()),
      loss_scalars_(sizeof(LossScalars)) {
  RA_CUBLAS_CHECK(
      cublasSetWorkspace(cublas_.get(), cublas_workspace_.data(), cublas_workspace_.size()));
  set_cublas_mode(KernelMode::deterministic);
}

CudaOps::~CudaOps() = default;

std::unique_ptr<CudaOps> make_cuda_ops(KernelMode mode, std::shared_ptr<const AlgorithmPins> pins) {
  auto ops = std::make_unique<CudaOps>(mode);
  if (pins) ops->pin_algorithms(std::move(pins));
  return ops;
}

Memory& CudaOps::memory() {
  return memory_;
}

nlohmann::json CudaOps::device_fingerprint() const {
  return cuda::device_fingerprint(cuda::query_device());
}

std::vector<Digest128> CudaOps::digest(const std::vector<const Tensor*>& tensors) {
  return device_digests(cuda::digest_items(tensors));
}

std::vector<Digest128> CudaOps::digest_regions(const std::vector<MemoryRegion>& regions) {
  return device_digests(cuda::digest_items(regions));
}

std::vector<Digest128> CudaOps::device_digests(const std::vector<cuda::DigestItem>& items) {
  require_outside_graph_step("a digest");
  digests_now_.queue(stream(), items);
  return digests_now_.take(stream());
}

void CudaOps::digest_when_done(const std::vector<const Tensor*>& tensors,
                               std::shared_ptr<std::vector<Digest128>> out) {
  require_outside_graph_step("a digest");
  deferred_digests_.queue(stream(), cuda::digest_items(tensors), std::move(out));
}

std::size_t CudaOps::queue_digests(const std::vector<MemoryRegion>& regions) {
  require_outside_graph_step("a queued digest");
  return digest_queue_.queue(stream_.get(), cuda::digest_items(regions));
}

std::vector<Digest128> CudaOps::take_queued_digests() {
  return digest_queue_.take(stream_.get());
}

void CudaOps::synchronize() {
  require_outside_graph_step("synchronize");
  stream_.synchronize();
  // The digests first: a bad label (the loss throws) leaves them correct all the same.
  deferred_digests_.resolve();
  resolve_pending_loss();
}

std::unique_ptr<DeviceTimer> CudaOps::make_device_timer() {
  return std::make_unique<cuda::EventTimer>(stream_.get());
}

void* CudaOps::workspace(std::size_t bytes) {
  workspace_.reserve(bytes);
  return workspace_.data();
}

// ---- pooling ----

void CudaOps::maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                                std::int32_t* argmax) {
  if (replayed_call(g, x, y, argmax)) return;
  if (g.x_size() > std::numeric_limits<std::int32_t>::max()) {
    throw RuntimeFailure("maxpool2d: input of " + std::to_string(g.x_size()) +
                         " elements is too large for int32 argmax indices");
  }
  if (g.y_size() == 0) return;
  kernels::maxpool_forward(stream(), g, x, y, argmax);
  RA_CUDA_CHECK(cudaGetLastError());
}

void CudaOps::maxpool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                                 const float* relu_gate, float* dx, KernelMode mode) {
  if (replayed_call(g, dy, argmax, relu_gate, dx, mode)) return;
  if (g.x_size() == 0) return;
  // The kernels index in int32 (kernels/maxpool_backward.h): argmax's range.
  if (g.x_size() > std::numeric_limits<std::int32_t>::max() ||
      g.y_size() > std::numeric_limits<std::int32_t>::max()) {
    throw RuntimeFailure("maxpool2d: input of " + std::to_string(g.x_size()) + " or output of " +
                         std::to_string(g.y_size()) + " elements is too large for int32 indices");
  }
  // The relu gate is applied as each dy is read (gate > 0 ? dy : 0, the relu backward's rule):
  // the same values enter the same sums as on the CPU.
  kernels::maxpool_backward(stream(), g, dy, relu_gate, argmax, dx,
                            cuda::kernels_deterministic(mode));
  RA_CUDA_CHECK(cudaGetLastError());
}

// ---- elementwise ----

void CudaOps::activation_forward(Activation act, std::int64_t count, const float* x, float* y) {
  if (replayed_call(act, count, x, y)) return;
  queue_activation_forward(act, count, x, y);
}

void CudaOps::activation_backward(Activation act, std::int64_t count, const float* y,
                                  const float* dy, float* dx) {
  if (replayed_call(act, count, y, dy, dx)) return;
  queue_activation_backward(act, count, y, dy, dx);
}

void CudaOps::queue_activation_forward(Activation act, std::int64_t count, const float* x,
                                       float* y) {
  if (count <= 0) return;
  kernels::activation_forward(stream(), static_cast<int>(act), count, x, y);
  RA_CUDA_CHECK(cudaGetLastError());
}

void CudaOps::queue_activation_backward(Activation act, std::int64_t count, const float* y,
                                        const float* dy, float* dx) {
  if (count <= 0) return;
  kernels::activation_backward(stream(), static_cast<int>(act), count, y, dy, dx);
  RA_CUDA_CHECK(cudaGetLastError());
}

void CudaOps::dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                              rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                              std::uint8_t* mask) {
  const bool replay = replayed_call(count, drop_threshold, scale, key, x, y, mask);
  if (count <= 0) return;
  if (launch_ == StepLaunch::eager) {
    step_scalars_.note(sizeof draw);
    kernels::dropout_forward(stream(), count, drop_threshold, scale, key, draw, x, y, mask);
    RA_CUDA_CHECK(cudaGetLastError());
    return;
  }
  // The draw changes every step: a graph reads it from a step argument (step_scalars.h), so
  // that each replay draws its own step's mask.
  const auto* at = step_scalars_.put(stream(), draw, /*queue_copy=*/!replay);
  if (replay) return;
  kernels::dropout_forward(stream(), count, drop_threshold, scale, key,
                           kernels::DeviceValue<std::uint64_t>{at}, x, y, mask);
  RA_CUDA_CHECK(cudaGetLastError());
}

void CudaOps::dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask,
                               const float* dy, float* dx) {
  if (replayed_call(count, scale, mask, dy, dx)) return;
  if (count <= 0) return;
  kernels::dropout_backward(stream(), count, scale, mask, dy, dx);
  RA_CUDA_CHECK(cudaGetLastError());
}

void CudaOps::optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                               const float* grad, float* s0, float* s1) {
  const bool replay = replayed_call(count, value, grad, s0, s1);
  if (count <= 0) return;
  if (launch_ == StepLaunch::eager) {
    step_scalars_.note(sizeof rule);
    kernels::optimizer_update(stream(), rule, count, value, grad, s0, s1);
    RA_CUDA_CHECK(cudaGetLastError());
    return;
  }
  // The rule changes every step (the learning rate's schedule, Adam's bias corrections): a step
  // argument in a graph, like dropout's draw.
  const auto* at = step_scalars_.put(stream(), rule, /*queue_copy=*/!replay);
  if (replay) return;
  kernels::optimizer_update(stream(), kernels::DeviceValue<optim::UpdateRule>{at}, count, value,
                            grad, s0, s1);
  RA_CUDA_CHECK(cudaGetLastError());
}

// ---- losses ----

template <class Launch>
void CudaOps::queue_loss(const char* op, int n, int classes, KernelMode mode, Launch launch) {
  if (n < 1 || classes < 1) {
    throw InputError(std::string(op) + ": need at least one sample and one class, got n = " +
                     std::to_string(n) + ", classes = " + std::to_string(classes));
  }
  // One loss in flight: its readback buffer is about to be written again.
  if (pending_loss_) synchronize();
  void* scratch = workspace(kernels::loss_workspace_bytes(n, classes));
  auto* scalars = loss_scalars_.as<LossScalars>();
  // The kernels set the flag but never clear it.
  RA_CUDA_CHECK(cudaMemsetAsync(scalars, 0, sizeof(LossScalars), stream()));
  // The kernels take their slices from the rule the plan reads (kernels/reduction_split.h).
  const cuda::ReductionPlan plan = cuda::plan_loss(mode, n);
  launch(&scalars->loss, !plan.atomic, scratch, &scalars->bad_label);
  RA_CUDA_CHECK(cudaGetLastError());
  note_reduction(cuda::reduction_ledger_entry(plan, op, cuda::loss_geometry_key(op, n, classes),
                                              "batch_sum",
                                              kernels::loss_workspace_bytes(n, classes)));
  RA_CUDA_CHECK(cudaMemcpyAsync(loss_readback_.get(), scalars, sizeof(LossScalars),
                                cudaMemcpyDeviceToHost, stream()));
}

void CudaOps::resolve_pending_loss() {
  if (!pending_loss_) return;
  const PendingLoss pending = *pending_loss_;
  pending_loss_.reset();
  const LossScalars& host = *loss_readback_.get();
  if (host.bad_label != 0) {
    throw InputError(std::string(pending.op) + ": a label of the batch is outside [0, " +
                     std::to_string(pending.classes) + ")");
  }
  *pending.value = host.loss;
}

namespace {

const char* loss_name(Ops::LossKind kind) {
  return kind == Ops::LossKind::mean_squared_error ? "mean_squared_error" : "softmax_cross_entropy";
}

}  // namespace

void CudaOps::loss_when_done(LossKind kind, int n, int classes, const float* pred,
                             const std::int32_t* labels, float* grad, KernelMode mode,
                             float* value) {
  const char* op = loss_name(kind);
  if (replayed_call(kind, n, classes, pred, labels, grad, mode)) {
    pending_loss_ = PendingLoss{op, classes, value};  // the graph copies it into loss_readback_
    return;
  }
  queue_loss(op, n, classes, mode,
             [&](float* loss_out, bool deterministic, void* scratch, int* bad_label) {
               if (kind == LossKind::mean_squared_error) {
                 kernels::mean_squared_error(stream(), n, classes, pred, labels, grad, loss_out,
                                             deterministic, scratch, bad_label);
               } else {
                 kernels::softmax_cross_entropy(stream(), n, classes, pred, labels, grad, loss_out,
                                                deterministic, scratch, bad_label);
               }
             });
  pending_loss_ = PendingLoss{op, classes, value};
}

float CudaOps::softmax_cross_entropy(int n, int classes, const float* logits,
                                     const std::int32_t* labels, float* dlogits, KernelMode mode) {
  float value = 0.0f;
  loss_when_done(LossKind::softmax_cross_entropy, n, classes, logits, labels, dlogits, mode,
                 &value);
  synchronize();
  return value;
}

float CudaOps::mean_squared_error(int n, int classes, const float* pred, const std::int32_t* labels,
                                  float* dpred, KernelMode mode) {
  float value = 0.0f;
  loss_when_done(LossKind::mean_squared_error, n, classes, pred, labels, dpred, mode, &value);
  synchronize();
  return value;
}

}  // namespace ra::backend::cuda
