#pragma once
// The CPU backend: every op of ops.h on host memory, multi-threaded on an owned ThreadPool.
//
// Structure (one file per op family): cpu_conv.cpp (direct convolutions, GEMM + col2im for the
// rest), cpu_dense.cpp (GEMM), cpu_pool.cpp, cpu_elementwise.cpp (activations, dropout),
// cpu_loss.cpp, cpu_optimizer.cpp, cpu_channel.cpp (batch normalisation). Building blocks, by
// folder (README.md lists them): conv/ (direct_conv.h, im2col.h), gemm/ (gemm.h: blocked
// single-thread SGEMM; parallel_gemm.h), pool/, simd/ (register tiles, transpose.h), reduce/
// (reduction.h: the two reduction modes), runtime/ (scratch.h: buffers reused across calls).
// reference/reference_ops.h holds the plain reference implementation the tests compare against.
//
// Determinism contract (ops.h): forward and elementwise ops write each output from one task with
// a fixed summation order; reducing ops follow KernelMode (see reduction.h). Results in
// deterministic mode are bitwise identical for every thread count.
//
// One CpuOps serves one run: calls must not overlap (its scratch buffers are shared by calls).
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/runtime/scratch.h"
#include "backend/ops.h"
#include "core/thread_pool.h"

namespace ra::backend::cpu {

class CpuOps final : public Ops {
 public:
  // Owns a ThreadPool of `threads` workers, the calling thread included. threads >= 1, else
  // ra::InputError.
  explicit CpuOps(int threads);
  CpuOps(const CpuOps&) = delete;
  CpuOps& operator=(const CpuOps&) = delete;

  std::string name() const override { return "cpu"; }
  int threads() const override { return pool_.threads(); }
  Memory& memory() override { return host_memory(); }
  // One kernel per op, instruction set and mode: "cpu avx512-fma, fixed reduction tree".
  std::optional<AlgorithmUsed> algorithm_used(const std::string& ledger_key,
                                              const std::string& direction,
                                              std::optional<KernelMode> mode) const override;
  void optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                        const float* grad, float* s0, float* s1) override;
  bool optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                 const float* grad, float* s0, float* s1,
                                 const optim::ChunkDigestTargets& digests) override;

  void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                      Activation act, float* y) override;
  void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                            const float* relu_gate, float* dx, KernelMode mode) override;
  void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                              KernelMode mode) override;
  void conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                            KernelMode mode) override;
  bool fuses_conv_maxpool(const ConvGeometry& g, const PoolGeometry& pool) const override;
  void conv2d_forward_maxpool(const ConvGeometry& g, const float* x, const float* w,
                              const float* bias, Activation act, const PoolGeometry& pool,
                              float* conv_out, float* y, std::int32_t* argmax) override;
  void conv2d_backward_filter_bias(const ConvGeometry& g, const float* x, const float* dy,
                                   float* dw, float* db, KernelMode filter_mode,
                                   KernelMode bias_mode) override;
  void conv2d_backward_maxpool(const ConvGeometry& g, const PoolGeometry& pool,
                               const MaxPoolGradient& pooled, const float* x, const float* w,
                               const float* relu_gate, float* conv_dy, float* dx, float* dw,
                               float* db, const ConvPoolBackwardModes& modes) override;

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

  void batchnorm_forward_training(const ChannelGeometry& g, const float* x, const float* gamma,
                                  const float* beta, float momentum, float epsilon,
                                  float* running_mean, float* running_var, float* saved_mean,
                                  float* saved_inv_std, float* y, KernelMode mode) override;
  // Fused for relu (and none): the activation applied as the normalised values are stored, bn_out
  // left unwritten; other activations run as the two ops.
  void batchnorm_forward_training_activation(const ChannelGeometry& g, const float* x,
                                             const float* gamma, const float* beta, float momentum,
                                             float epsilon, float* running_mean, float* running_var,
                                             float* saved_mean, float* saved_inv_std,
                                             Activation act, float* bn_out, float* y,
                                             KernelMode mode) override;
  void batchnorm_forward_inference(const ChannelGeometry& g, const float* x, const float* gamma,
                                   const float* beta, const float* running_mean,
                                   const float* running_var, float epsilon, float* y) override;
  void batchnorm_backward(const ChannelGeometry& g, const float* x, const float* dy,
                          const float* gamma, const float* saved_mean, const float* saved_inv_std,
                          float* dx, float* dgamma, float* dbeta, KernelMode mode) override;

  // Fused: the add in the pass that stores dx.
  void batchnorm_backward_add(const ChannelGeometry& g, const float* x, const float* dy,
                              const float* gamma, const float* saved_mean,
                              const float* saved_inv_std, const float* addend, float* dx,
                              float* dgamma, float* dbeta, KernelMode mode) override;

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

  float softmax_cross_entropy(int n, int classes, const float* logits, const std::int32_t* labels,
                              float* dlogits, KernelMode mode) override;
  float mean_squared_error(int n, int classes, const float* pred, const std::int32_t* labels,
                           float* dpred, KernelMode mode) override;

  // The scratch arena (for tests: ScratchArena::late_growths).
  const cpu::ScratchArena& scratch() const noexcept { return scratch_; }

 private:
  // conv2d_backward_data through gemm() + col2im, without the relu gate.
  void conv2d_backward_data_gemm(const ConvGeometry& g, const float* dy, const float* w, float* dx,
                                 KernelMode mode);
  // channel_sums_[c * width + v] = the sum over the channel's planes of value v of
  // plane_sums(plane, values) (width <= 2), in `mode` (cpu_channel.cpp).
  template <class PlaneSums>
  void channel_sums(const ChannelGeometry& g, KernelMode mode, int width,
                    const PlaneSums& plane_sums);
  // channel_sums of width 1, two planes at a time where a task has two: pair_sums(plane, values)
  // gives planes plane and plane + 1 the values plane_sums would (the nondeterministic mode takes
  // them one at a time).
  template <class PlaneSums, class PairSums>
  void paired_channel_sums(const ChannelGeometry& g, KernelMode mode, const PlaneSums& plane_sums,
                           const PairSums& pair_sums);
  // channel_sums_ set from the planes' partials, each channel's in image order (the deterministic
  // tree).
  void reduce_planes(const ChannelGeometry& g, int width, const float* partials);
  // batchnorm_forward_training with y = relu(y) when `relu` (cpu_channel.cpp).
  void batchnorm_training(const ChannelGeometry& g, const float* x, const float* gamma,
                          const float* beta, float momentum, float epsilon, float* running_mean,
                          float* running_var, float* saved_mean, float* saved_inv_std, bool relu,
                          float* y, KernelMode mode);

  ThreadPool pool_;
  cpu::ScratchArena scratch_;
  std::vector<double> channel_sums_;         // channel_sums' result
  std::vector<float> channel_coefficients_;  // batchnorm_backward's per-channel coefficients
};

std::unique_ptr<Ops> make_cpu_ops(int threads);

}  // namespace ra::backend::cpu
