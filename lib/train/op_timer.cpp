#include "train/op_timer.h"

namespace ra::train {

TimingOps::TimingOps(std::unique_ptr<backend::Ops> inner)
    : ForwardingOps(*inner), owned_(std::move(inner)), device_timer_(owned_->make_device_timer()) {
  observe_composites_whole(!device_timer_);  // see op_timer.h, observe
  for (const OpInfo& op : kOpTable) rows_.push_back(&op);
  table_.resize(rows_.size());
}

std::size_t TimingOps::row_index(const OpInfo& op) {
  const auto index = static_cast<std::size_t>(op.id);
  if (index < kOpTable.size() && &op == &kOpTable[index]) return index;
  for (std::size_t i = kOpTable.size(); i < rows_.size(); ++i) {
    if (rows_[i] == &op) return i;
  }
  rows_.push_back(&op);
  table_.emplace_back();
  return rows_.size() - 1;
}

void TimingOps::add(std::size_t op, int mode_slot, Clock::time_point start) noexcept {
  Accumulator& a = table_[op][static_cast<std::size_t>(mode_slot)];
  a.elapsed += Clock::now() - start;
  ++a.calls;
}

void TimingOps::count(std::size_t op, int mode_slot) noexcept {
  ++table_[op][static_cast<std::size_t>(mode_slot)].calls;
}

void TimingOps::collect_device_times(bool keep) {
  if (!device_timer_) return;
  device_timer_->collect([this, keep](int tag, double seconds) {
    if (!keep) return;
    Accumulator& a = table_[static_cast<std::size_t>(tag / kModeSlots)]
                           [static_cast<std::size_t>(tag % kModeSlots)];
    a.elapsed +=
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  });
}

void TimingOps::synchronize() {
  ForwardingOps::synchronize();
  collect_device_times(true);
}

std::vector<OpTime> TimingOps::times() const {
  std::vector<OpTime> out;
  for (std::size_t op = 0; op < table_.size(); ++op) {
    for (int m = 0; m < kModeSlots; ++m) {
      const Accumulator& a = table_[op][static_cast<std::size_t>(m)];
      if (a.calls == 0) continue;
      out.push_back(OpTime{std::string(rows_[op]->timing_label),
                           m == 0 ? "" : backend::to_string(static_cast<KernelMode>(m - 1)),
                           std::chrono::duration<double>(a.elapsed).count(), a.calls});
    }
  }
  return out;
}

void TimingOps::reset() {
  collect_device_times(false);
  for (auto& row : table_) row = {};
}

void TimingOps::observe(const backend::OpCall& call) {
  const Stopwatch watch(*this, row_index(call.op), call.mode ? slot(*call.mode) : 0);
  call.run();
}

}  // namespace ra::train
