#pragma once
// The arguments of a step's op calls, folded in call order (FNV-1a over their bytes): what a
// replayed step checks against the captured one before its graph is launched, so that a graph
// never runs on buffers that moved since its capture (a tensor reallocated, a workspace grown by
// an evaluation between two steps), nor on another sequence of ops. The arguments that change
// every step by design (dropout's draw, the optimizer's rule) are not folded: they reach the
// graph through step_scalars.h.
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ra::backend::cuda {

class StepCallPrint {
 public:
  void reset() noexcept { value_ = kOffset; }
  std::uint64_t value() const noexcept { return value_; }

  template <class... Args>
  void add(const Args&... args) noexcept {
    (fold(args), ...);
  }

 private:
  static constexpr std::uint64_t kOffset = 14695981039346656037ull;
  static constexpr std::uint64_t kPrime = 1099511628211ull;

  template <class T>
  void fold(const T& arg) noexcept {
    if constexpr (std::is_same_v<T, float>) {
      fold(std::bit_cast<std::uint32_t>(arg));
    } else {
      // Padding bytes would make two equal calls differ: only types without any are folded.
      static_assert(std::has_unique_object_representations_v<T>,
                    "a step call argument with padding or float members");
      unsigned char bytes[sizeof(T)];
      std::memcpy(bytes, &arg, sizeof(T));
      for (const unsigned char b : bytes) value_ = (value_ ^ b) * kPrime;
    }
  }

  std::uint64_t value_ = kOffset;
};

}  // namespace ra::backend::cuda
