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
  std::string mode;  // "deterministic", "batch_invariant", ...; "" for ops without a mode
  double seconds = 0.0;
  std::int64_t calls = 0;
};

class TimingOps final : public backend::ForwardingOps {
 public:
  using KernelMode = backend::KernelMode;
  // Wraps and owns `inner` (for RunOptions::make_backend, which hands out one owning pointer).
  explicit TimingOps(std::unique_ptr<backend::Ops> inner);

  // One entry per (op, mode) that was called at least once since the last reset, in the order of
  // the op table (core/op_table.h: forward ops first; ops of rows outside it after them), then by
  // mode, named by the row's timing label. With a device timer, its times are those read at the
  // last synchronize().
  std::vector<OpTime> times() const;
  // Empties the table (device intervals still queued are waited for and dropped).
  void reset();
  // Whether the ops are timed in device time (the backend has a DeviceTimer).
  bool device_timed() const noexcept { return device_timer_ != nullptr; }
  // Waits for the backend, then adds the device intervals to the table.
  void synchronize() override;

 private:
  // Every op (backend/forwarding_ops.h), timed whole: with host clocks the composites are the
  // backend's fused passes, timed as their own ops; with a device timer they run as Ops' defaults,
  // their parts each timed: the CUDA backend fuses none of them (its pair calls are those
  // defaults), and the GPU table then says what the filter and bias gradients cost apiece. A
  // composite takes the mode slot of its filter gradient, the largest reduction of its parts.
  void observe(const backend::OpCall& call) override;

  // Mode slot 0 is "no mode"; slots 1..4 are KernelMode + 1 (the last, batch_invariant, sized
  // from it below: a mode added to backend/modes.h must move it). Indexed by the op's row, not a
  // map keyed by strings: the per-call cost stays two clock reads and two adds.
  static constexpr int kModeSlots = static_cast<int>(KernelMode::batch_invariant) + 2;
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
    Stopwatch(TimingOps& owner, std::size_t op, int mode_slot)
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
    std::size_t op_;
    int slot_;
    Clock::time_point start_;
  };
  void add(std::size_t op, int mode_slot, Clock::time_point start) noexcept;
  void count(std::size_t op, int mode_slot) noexcept;
  // The position of the op's row in table_: its id for a row of the op table, else appended.
  std::size_t row_index(const OpInfo& op);
  // Reads the device timer's intervals into the table (or drops them).
  void collect_device_times(bool keep);
  static int slot(KernelMode mode) noexcept { return static_cast<int>(mode) + 1; }
  static int tag(std::size_t op, int mode_slot) noexcept {
    return static_cast<int>(op) * kModeSlots + mode_slot;
  }

  std::unique_ptr<backend::Ops> owned_;
  std::unique_ptr<backend::DeviceTimer> device_timer_;  // null: host clocks; after owned_
  std::vector<const OpInfo*> rows_;  // the op of each row of table_: the op table, then others
  std::vector<std::array<Accumulator, kModeSlots>> table_;
};

}  // namespace ra::train
