#pragma once
// TimingOps: a backend::Ops decorator that forwards every call to another backend and adds up
// the wall time (steady_clock) spent in each op, per kernel mode. `repro-audit bench` uses it to
// show where a training step goes and what the deterministic kernels cost against the
// nondeterministic ones.
//
// Where the backend hands out a DeviceTimer (backend/device_timer.h: the CUDA backend, whose ops
// return once their work is queued), each call is timed in DEVICE time instead: a marker (CUDA
// event) is queued before and after the forwarded call, and the intervals are read and added to
// the table at synchronize() (the trainer calls it at every step's end) or reset(). Calls are
// counted at once; times() covers the intervals read so far. Elsewhere timing is host wall time
// around the forwarded call: the CPU backend returns only when the work is done, so its figures
// are exact.
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/forwarding_ops.h"

namespace ra::train {

struct OpTime {
  std::string op;    // "conv2d_forward", ...
  std::string mode;  // "deterministic", "nondeterministic", "autotune"; "" for ops without a mode
  double seconds = 0.0;
  std::int64_t calls = 0;
};

class TimingOps final : public backend::ForwardingOps {
 public:
  using KernelMode = backend::KernelMode;
  // Wraps and owns `inner` (for RunOptions::make_backend, which hands out one owning pointer).
  explicit TimingOps(std::unique_ptr<backend::Ops> inner);

  // One entry per (op, mode) that was called at least once since the last reset, in the order of
  // the Op list below (forward ops first), then by mode. With a device timer, its times are those
  // read at the last synchronize().
  std::vector<OpTime> times() const;
  // Empties the table (device intervals still queued are waited for and dropped).
  void reset();
  // Whether the ops are timed in device time (the backend has a DeviceTimer).
  bool device_timed() const noexcept { return device_timer_ != nullptr; }
  // Waits for the backend, then adds the device intervals to the table.
  void synchronize() override;

  // The timed ops; the rest (name, memory, ledger, ...) are forwarded untimed.
  void conv2d_forward(const backend::ConvGeometry& g, const float* x, const float* w,
                      const float* bias, backend::Activation act, float* y) override;
  void conv2d_backward_data(const backend::ConvGeometry& g, const float* dy, const float* w,
                            const float* relu_gate, float* dx, KernelMode mode) override;
  void conv2d_backward_filter(const backend::ConvGeometry& g, const float* x, const float* dy,
                              float* dw, KernelMode mode) override;
  void conv2d_backward_bias(const backend::ConvGeometry& g, const float* dy, float* db,
                            KernelMode mode) override;
  // Timed whole, as their own ops: the backend's fused passes (not their parts). With a device
  // timer they run as Ops' defaults, their parts each timed: the CUDA backend fuses none of them
  // (its pair calls are those defaults), and the GPU table then says what the filter and bias
  // gradients cost apiece.
  void conv2d_forward_maxpool(const backend::ConvGeometry& g, const float* x, const float* w,
                              const float* bias, backend::Activation act,
                              const backend::PoolGeometry& pool, float* conv_out, float* y,
                              std::int32_t* argmax) override;
  void conv2d_backward_filter_bias(const backend::ConvGeometry& g, const float* x, const float* dy,
                                   float* dw, float* db, KernelMode filter_mode,
                                   KernelMode bias_mode) override;
  void conv2d_backward_maxpool(const backend::ConvGeometry& g, const backend::PoolGeometry& pool,
                               const backend::MaxPoolGradient& pooled, const float* x,
                               const float* w, const float* relu_gate, float* conv_dy, float* dx,
                               float* dw, float* db,
                               const backend::ConvPoolBackwardModes& modes) override;
  void dense_forward(const backend::DenseGeometry& g, const float* x, const float* w,
                     const float* bias, backend::Activation act, float* y) override;
  void dense_backward_data(const backend::DenseGeometry& g, const float* dy, const float* w,
                           float* dx, KernelMode mode) override;
  void dense_backward_weight(const backend::DenseGeometry& g, const float* x, const float* dy,
                             float* dw, KernelMode mode) override;
  void dense_backward_bias(const backend::DenseGeometry& g, const float* dy, float* db,
                           KernelMode mode) override;
  void maxpool2d_forward(const backend::PoolGeometry& g, const float* x, float* y,
                         std::int32_t* argmax) override;
  void maxpool2d_backward(const backend::PoolGeometry& g, const float* dy,
                          const std::int32_t* argmax, const float* relu_gate, float* dx,
                          KernelMode mode) override;
  void activation_forward(backend::Activation act, std::int64_t count, const float* x,
                          float* y) override;
  void activation_backward(backend::Activation act, std::int64_t count, const float* y,
                           const float* dy, float* dx) override;
  void dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                       rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                       std::uint8_t* mask) override;
  void dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask, const float* dy,
                        float* dx) override;
  std::vector<Digest128> digest(const std::vector<const Tensor*>& tensors) override;
  void optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                        const float* grad, float* s0, float* s1) override;
  bool optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                 const float* grad, float* s0, float* s1,
                                 const optim::ChunkDigestTargets& digests) override;
  float softmax_cross_entropy(int n, int classes, const float* logits, const std::int32_t* labels,
                              float* dlogits, KernelMode mode) override;
  float mean_squared_error(int n, int classes, const float* pred, const std::int32_t* labels,
                           float* dpred, KernelMode mode) override;

  // The ops timed, in report order.
  enum class Op {
    conv2d_forward,
    conv2d_forward_maxpool,
    conv2d_backward_data,
    conv2d_backward_filter,
    conv2d_backward_bias,
    conv2d_backward_filter_bias,
    conv2d_backward_maxpool,
    dense_forward,
    dense_backward_data,
    dense_backward_weight,
    dense_backward_bias,
    maxpool2d_forward,
    maxpool2d_backward,
    activation_forward,
    activation_backward,
    dropout_forward,
    dropout_backward,
    softmax_cross_entropy,
    mean_squared_error,
    optimizer_update,
    digest,
    count_
  };
  static const char* op_name(Op op) noexcept;

 private:
  // Mode slot 0 is "no mode"; slots 1..3 are KernelMode + 1. A fixed table, not a map keyed by
  // strings: the per-call cost stays two clock reads and two adds.
  static constexpr int kModeSlots = 4;
  struct Accumulator {
    std::chrono::steady_clock::duration elapsed{};
    std::int64_t calls = 0;
  };
  using Clock = std::chrono::steady_clock;
  // Adds the time from its construction to its destruction to (op, mode slot): host time, or
  // with a device timer an interval of device time, added when it is collected (DeviceTimer::stop
  // never throws).
  class Stopwatch {
   public:
    Stopwatch(TimingOps& owner, Op op, int mode_slot)
        : owner_(owner), op_(op), slot_(mode_slot), start_(Clock::now()) {
      if (owner_.device_timer_) owner_.device_timer_->start();
    }
    ~Stopwatch() {
      if (!owner_.device_timer_) {
        owner_.add(op_, slot_, start_);
        return;
      }
      owner_.device_timer_->stop(tag(op_, slot_));
      owner_.count(op_, slot_);
    }
    Stopwatch(const Stopwatch&) = delete;
    Stopwatch& operator=(const Stopwatch&) = delete;

   private:
    TimingOps& owner_;
    Op op_;
    int slot_;
    Clock::time_point start_;
  };
  void add(Op op, int mode_slot, Clock::time_point start) noexcept;
  void count(Op op, int mode_slot) noexcept;
  // Reads the device timer's intervals into the table (or drops them).
  void collect_device_times(bool keep);
  static int slot(KernelMode mode) noexcept { return static_cast<int>(mode) + 1; }
  static int tag(Op op, int mode_slot) noexcept {
    return static_cast<int>(op) * kModeSlots + mode_slot;
  }

  std::unique_ptr<backend::Ops> owned_;
  std::unique_ptr<backend::DeviceTimer> device_timer_;  // null: host clocks; after owned_
  std::array<std::array<Accumulator, kModeSlots>, static_cast<std::size_t>(Op::count_)> table_{};
};

}  // namespace ra::train
