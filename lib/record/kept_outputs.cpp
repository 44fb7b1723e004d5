#include "record/kept_outputs.h"

namespace ra::record {

bool KeptOutputs::keep(int run, std::int64_t step, std::size_t index, Outputs outputs) {
  std::size_t bytes = 0;
  for (const Bytes& b : outputs.bytes) bytes += b.size();
  const std::lock_guard lock(mutex_);
  // Once full, a run keeps nothing more: what it kept stays a prefix of its window.
  if (full_[run] || used_[run] + bytes > budget_) {
    full_[run] = true;
    return false;
  }
  used_[run] += bytes;
  outputs_[Key{run, step, index}] = std::move(outputs);
  return true;
}

std::optional<KeptOutputs::Outputs> KeptOutputs::find(int run, std::int64_t step,
                                                      std::size_t index) const {
  const std::lock_guard lock(mutex_);
  const auto it = outputs_.find(Key{run, step, index});
  if (it == outputs_.end()) return std::nullopt;
  return it->second;
}

std::size_t KeptOutputs::bytes_kept(int run) const {
  const std::lock_guard lock(mutex_);
  const auto it = used_.find(run);
  return it == used_.end() ? 0 : it->second;
}

}  // namespace ra::record
