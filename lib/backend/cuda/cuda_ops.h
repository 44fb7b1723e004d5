#pragma once
// The CUDA backend: every op of ops.h on DEVICE memory (every pointer argument, labels included,
// points into memory()), queued on one stream; memory()'s zeros and copies are queued on it too.
//
//   convolution   cuDNN (legacy API), algorithms per algorithm_policy.h, descriptors and the
//                 chosen algorithms cached per geometry (conv_plan.h); bias by kernels/bias.cuh
//   dense         cuBLAS sgemm on row-major data (cuda_dense.cpp: the transposition trick);
//                 nondeterministic gradients: atomic split-k kernels (kernels/splitk_gemm.cuh)
//   batch normalisation   cuDNN's batch-norm calls, spatial mode (cuda_norm.cpp); global average
//                         pooling kernels/global_avgpool.cuh
//   pooling, activations, dropout, losses, optimizer   kernels/*.cuh (custom, CPU-identical rules)
//
// Workspaces are grow-only buffers: after the first step of a run (every geometry seen once) no
// call allocates. Ops return when their work is queued, except the losses that return their value,
// which copy it (and the bad-label flag) back to the host and wait; a training step's loss
// (loss_when_done) is read at the step's synchronize() instead, so the step never waits midway.
//
// KernelMode: the reducing ops follow the mode of each call (algorithm_policy.h). The forward
// ops have no mode argument: the mode given at construction decides whether the forward
// convolution's algorithm is chosen by cuDNN's heuristic (deterministic), pinned
// (nondeterministic, batch_invariant) or autotuned (autotune), and whether the dense forward
// product runs cuBLAS or, batch_invariant, the fixed-order split-k kernel (cuda_dense.cpp).
//
// One CudaOps serves one run: calls must not overlap (its workspaces are shared by calls).
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/conv_plan.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/cuda_resources.h"
#include "backend/cuda/deferred_digests.h"
#include "backend/cuda/digest_queue.h"
#include "backend/cuda/ledger.h"
#include "backend/cuda/step_call_print.h"
#include "backend/cuda/step_graph_policy.h"
#include "backend/cuda/step_scalars.h"
#include "backend/ops.h"

namespace ra::backend::cuda {

class CudaOps final : public Ops {
 public:
  // Uses device 0. Throws cuda::CudaError (a RuntimeFailure: exit 3) when query_device() finds no
  // usable device, with its reason, or when a handle cannot be created.
  explicit CudaOps(KernelMode forward_mode = KernelMode::deterministic);
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;
  ~CudaOps() override;

  std::string name() const override { return "cuda"; }
  int threads() const override { return 1; }  // host threads; the device work is on one stream
  // Device memory whose zeros and copies are queued on stream() (cuda_memory.h); what is
  // allocated through it must not outlive this object.
  Memory& memory() override;
  // Page-locked host memory (cuda_memory.h): snapshots download into it by DMA alone.
  Memory& staging_memory() const override { return pinned_host_memory(); }

  // What ran for each convolution and dense geometry and direction, in first-use order, each
  // once: a convolution's entry (one per geometry, direction and mode, chosen by ConvPlan) is
  // recorded after its cuDNN call first returned success, so an algorithm that never ran is never
  // listed; run_dense_product once per geometry, direction and cuBLAS modes, so no entry repeats
  // another. The custom-kernel reductions (bias and loss sums, nondeterministic dense gradients)
  // are noted once per geometry key, direction and algorithm (note_reduction), with whether they
  // can vary.
  const std::vector<cuda::LedgerEntry>& ledger_entries() const noexcept { return ledger_; }
  nlohmann::json ledger() const override { return cuda::to_json(ledger_entries()); }
  nlohmann::json device_fingerprint() const override;
  // The latest ledger entry of the geometry and direction.
  std::optional<AlgorithmUsed> algorithm_used(const std::string& ledger_key,
                                              const std::string& direction,
                                              std::optional<KernelMode> mode) const override;
  // Convolutions choose again at their next call, from the pins where they have one.
  void pin_algorithms(std::shared_ptr<const AlgorithmPins> pins) override;
  // Chunk digests computed on the device in one launch; only 16 bytes per 64 KiB cross to the host.
  std::vector<Digest128> digest(const std::vector<const Tensor*>& tensors) override;
  // The same for flat regions (the op recorder's inputs and outputs): one launch, one download.
  std::vector<Digest128> digest_regions(const std::vector<MemoryRegion>& regions) override;
  // The same, queued with their copy back to page-locked memory; read at synchronize().
  void digest_when_done(const std::vector<const Tensor*>& tensors,
                        std::shared_ptr<std::vector<Digest128>> out) override;
  // The same, queued on the stream and taken once per step (digest_queue.h).
  bool queues_digests() const override { return true; }
  std::size_t queue_digests(const std::vector<MemoryRegion>& regions) override;
  std::vector<Digest128> take_queued_digests() override;
  cudaStream_t stream() const noexcept { return stream_.get(); }
  // Waits for the stream: every op queued so far has finished.
  void synchronize() override;
  // CUDA events on the stream (event_timer.h).
  std::unique_ptr<DeviceTimer> make_device_timer() override;

  // The step as a CUDA graph (step_graph_policy.h says when): a captured step's ops are recorded
  // by stream capture, then the graph is launched at end_step; a replayed step's ops queue
  // nothing and write only their step arguments (step_scalars.h), and end_step launches the
  // graph, unless their call print (step_call_print.h) differs from the capture's: then nothing
  // ran, the graph is dropped and end_step returns false. A failed capture returns false too,
  // and every later step runs eager, with the failure as its reason.
  StepLaunchDecision begin_step(const StepRequest& request) override;
  bool end_step(std::string_view op_failure) override;

  void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                      Activation act, float* y) override;
  void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                            const float* relu_gate, float* dx, KernelMode mode) override;
  void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                              KernelMode mode) override;
  void conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                            KernelMode mode) override;

  void dense_forward(const DenseGeometry& g, const float* x, const float* w, const float* bias,
                     Activation act, float* y) override;
  void dense_backward_data(const DenseGeometry& g, const float* dy, const float* w, float* dx,
                           KernelMode mode) override;
  void dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy, float* dw,
                             KernelMode mode) override;
  void dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                           KernelMode mode) override;

  void maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                         std::int32_t* argmax) override;
  void maxpool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                          const float* relu_gate, float* dx, KernelMode mode) override;

  // cuDNN batch normalisation, spatial mode, and global average pooling (cuda_norm.cpp).
  void batchnorm_forward_training(const ChannelGeometry& g, const float* x, const float* gamma,
                                  const float* beta, float momentum, float epsilon,
                                  float* running_mean, float* running_var, float* saved_mean,
                                  float* saved_inv_std, float* y, KernelMode mode) override;
  void batchnorm_forward_inference(const ChannelGeometry& g, const float* x, const float* gamma,
                                   const float* beta, const float* running_mean,
                                   const float* running_var, float epsilon, float* y) override;
  void batchnorm_backward(const ChannelGeometry& g, const float* x, const float* dy,
                          const float* gamma, const float* saved_mean, const float* saved_inv_std,
                          float* dx, float* dgamma, float* dbeta, KernelMode mode) override;

  void global_avgpool_forward(const ChannelGeometry& g, const float* x, float* y) override;
  void global_avgpool_backward(const ChannelGeometry& g, const float* dy, float* dx) override;
  void residual_add(std::int64_t count, const float* a, const float* b, float* y) override;
  void activation_forward(Activation act, std::int64_t count, const float* x, float* y) override;
  void activation_backward(Activation act, std::int64_t count, const float* y, const float* dy,
                           float* dx) override;
  void dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                       rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                       std::uint8_t* mask) override;
  void dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask, const float* dy,
                        float* dx) override;

  void optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                        const float* grad, float* s0, float* s1) override;

  float softmax_cross_entropy(int n, int classes, const float* logits, const std::int32_t* labels,
                              float* dlogits, KernelMode mode) override;
  float mean_squared_error(int n, int classes, const float* pred, const std::int32_t* labels,
                           float* dpred, KernelMode mode) override;
  // Queued with a copy of the value into page-locked memory, and no wait: synchronize() stores
  // the value (or throws the bad label). One at a time: a second loss first waits for the first.
  void loss_when_done(LossKind kind, int n, int classes, const float* pred,
                      const std::int32_t* labels, float* grad, KernelMode mode,
                      float* value) override;

 private:
  struct LossScalars {
    float loss;
    int bad_label;
  };
  // A loss queued by loss_when_done, read when the stream has finished.
  struct PendingLoss {
    const char* op = nullptr;
    int classes = 0;
    float* value = nullptr;
  };
  using ConvKey = std::array<int, 15>;
  cuda::ConvPlan& conv_plan(const ConvGeometry& g);
  // x itself, or (asymmetric padding) x copied into padded_input_.
  const float* conv_input(const cuda::ConvPlan& plan, const float* x);
  // The operands autotune's cudnnFind*AlgorithmEx runs on (conv_plan.h), with this backend's
  // workspace.
  cuda::ConvFindOperands find_operands(const float* first, const float* second, float* output);
  void* workspace(std::size_t bytes);
  // What digest() and digest_regions() run: one launch, one download, one wait.
  std::vector<Digest128> device_digests(const std::vector<cuda::DigestItem>& items);
  // Sets cuBLAS's atomics and math modes from cublas_policy(mode).
  void set_cublas_mode(KernelMode mode);
  // Runs one cuBLAS product of a dense layer in `mode`: sets the handle's modes, runs `product`
  // (returning cublasSgemm's status), and only after it returned success appends its ledger
  // entry, the first time its geometry, direction and the cuBLAS modes are seen. A failure
  // throws a CudaError naming the geometry, direction, algorithm and status (op_execution.h).
  void run_dense_product(const DenseGeometry& g, int direction, KernelMode mode,
                         const std::function<cublasStatus_t()>& product);
  // The first call of every op: folds its fixed arguments into the step's call print in a
  // captured or replayed step, and returns true in a replayed one (the op then only writes its
  // step arguments: the graph does its work).
  template <class... Args>
  bool replayed_call(const Args&... args) {
    if (launch_ != StepLaunch::eager) step_print_.add(args...);
    return launch_ == StepLaunch::replay;
  }
  // The activation kernels, for the ops that fuse one (their own call is the one folded).
  void queue_activation_forward(Activation act, std::int64_t count, const float* x, float* y);
  void queue_activation_backward(Activation act, std::int64_t count, const float* y,
                                 const float* dy, float* dx);
  // Throws std::logic_error inside a captured or replayed step: for the calls that wait.
  void require_outside_graph_step(const char* call) const;
  // What a step may settle (algorithms chosen, ledger entries, buffers grown): a change during
  // a step means the next may still choose, so it is not captured.
  std::size_t settled_state() const noexcept;
  // The addresses of the buffers the ops use besides their arguments, into the call print.
  void fold_own_buffers();
  // A step whose work did not run (a failed capture, a stale graph): back to eager calls.
  void abandon_step();
  // Queues the loss kernel `launch` and the copy of its scalars into loss_readback_.
  template <class Launch>
  void queue_loss(const char* op, int n, int classes, KernelMode mode, Launch launch);
  // After the stream has finished: the queued loss's value into its caller's float, or its bad
  // label thrown. Nothing when no loss is pending.
  void resolve_pending_loss();
  // The bias gradient of dense (spatial 1) and conv layers by kernels::bias_backward, in the
  // plan of split_plan.h, noted under `layer` (the geometry key).
  void bias_gradient(const std::string& layer, const float* dy, float* db, int n, int k,
                     int spatial, KernelMode mode);
  // Appends the ledger entry of a custom-kernel reduction (split_plan.h: reduction_ledger_entry)
  // the first time its layer, direction and algorithm are seen. Called after the launch
  // succeeded, so an entry always names something that ran.
  void note_reduction(cuda::LedgerEntry entry);

  KernelMode forward_mode_;
  std::shared_ptr<const AlgorithmPins> pins_;  // null: algorithms as the modes choose them
  cuda::Stream stream_;
  cuda::DeviceMemory memory_;  // bound to stream_ (declared after it)
  cuda::CudnnHandle cudnn_;
  // Before the handle that is given it (cublasSetWorkspace): destroyed after it, so the handle
  // never holds a freed workspace.
  cuda::DeviceBuffer cublas_workspace_;
  cuda::CublasHandle cublas_;
  cuda::DeviceBuffer workspace_;     // cuDNN, bias and loss scratch (grow-only, shared)
  cuda::DeviceBuffer padded_input_;  // asymmetric padding: x with the extra rows and columns
  cuda::DeviceBuffer padded_grad_;   // asymmetric padding: gradient of that padded x
  cuda::DeviceBuffer loss_scalars_;  // LossScalars
  cuda::PinnedHostValue<LossScalars> loss_readback_;  // their copy, read after a wait
  std::optional<PendingLoss> pending_loss_;
  cuda::StepScalars step_scalars_;  // dropout draws and optimizer rules, per step
  // CUDA graphs of the training step (begin_step, end_step).
  cuda::StepGraphPolicy graph_policy_{true};
  StepLaunch launch_ = StepLaunch::eager;  // of the step between begin_step and end_step
  int step_batch_ = 0;
  std::int64_t steps_begun_ = 0;
  std::size_t settled_at_begin_ = 0;
  cuda::StepCallPrint step_print_;
  cuda::GraphExec step_graph_;
  std::uint64_t graph_print_ = 0;           // the captured step's call print
  std::size_t graph_scalar_bytes_ = 0;      // and its step arguments' bytes
  cuda::DigestQueue digests_now_;           // digest() and digest_regions(), taken at once
  cuda::DigestQueue digest_queue_;          // queue_digests' until taken
  cuda::DeferredDigests deferred_digests_;  // digest_when_done's until synchronize()
  std::map<ConvKey, std::unique_ptr<cuda::ConvPlan>> conv_plans_;
  std::vector<cuda::LedgerEntry> ledger_;
  std::set<std::array<int, 6>> dense_noted_;  // {n, in, out, direction, atomics allowed, math}
  std::set<std::string> reductions_noted_;    // layer, direction, algorithm of note_reduction
};

// The backend for a run: `mode` is the spec's determinism mode (it chooses pinned or autotuned
// forward convolutions; reducing ops get their own mode per call). Throws cuda::CudaError (exit
// 3) when there is no usable GPU, saying why.
// With `pins`, convolutions run the pinned algorithms (backend/algorithm_pins.h).
std::unique_ptr<CudaOps> make_cuda_ops(KernelMode mode,
                                       std::shared_ptr<const AlgorithmPins> pins = nullptr);

}  // namespace ra::backend::cuda
