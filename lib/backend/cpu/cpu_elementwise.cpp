// Elementwise ops: activations, the residual add and inverted dropout. No reductions: blocks of
// kElementBlock elements per task, every output written once, so any thread count gives the same
// bits.
#include <algorithm>
#include <bit>
#include <cmath>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "rng/philox_batch.h"

namespace ra::backend::cpu {
namespace {

template <class Body>
void for_blocks(ThreadPool& pool, std::int64_t count, const Body& body) {
  cpu::parallel_for(pool, cpu::block_count(count), [&](std::int64_t block, int) {
    const std::int64_t begin = block * cpu::kElementBlock;
    body(begin, std::min(count, begin + cpu::kElementBlock));
  });
}

// kept where keep is 1, +0 (all bits cleared) where it is 0: a select without a branch, which
// the compiler turns into vector ands.
inline float kept_or_zero(float kept, std::uint32_t keep) {
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(kept) & (0u - keep));
}

}  // namespace

void CpuOps::activation_forward(Activation act, std::int64_t count, const float* x, float* y) {
  for_blocks(pool_, count, [&](std::int64_t begin, std::int64_t end) {
    cpu::activate(act, x + begin, y + begin, end - begin);
  });
}

void CpuOps::activation_backward(Activation act, std::int64_t count, const float* y,
                                 const float* dy, float* dx) {
  for_blocks(pool_, count, [&](std::int64_t begin, std::int64_t end) {
    switch (act) {
      case Activation::none:
        if (dy != dx) std::copy(dy + begin, dy + end, dx + begin);
        break;
      case Activation::relu:
        cpu::relu_backward(y + begin, dy + begin, dx + begin, end - begin);
        break;
      case Activation::tanh:
        for (std::int64_t i = begin; i < end; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
        break;
      case Activation::sigmoid:
        for (std::int64_t i = begin; i < end; ++i) dx[i] = dy[i] * (y[i] * (1.0f - y[i]));
        break;
    }
  });
}

void CpuOps::residual_add(std::int64_t count, const float* a, const float* b, float* y) {
  for_blocks(pool_, count, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
  });
}

void CpuOps::dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                             rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                             std::uint8_t* mask) {
  // The words come kWords at a time from the vectorised generator (rng/philox_batch.h). Tasks and
  // batches of words start at multiples of kWords, itself a multiple of 4, so every Philox block
  // (4 words) is computed whole, by one task.
  constexpr std::int64_t kWords = 1024;
  static_assert(kWords % 4 == 0 && cpu::kElementBlock % kWords == 0);
  for_blocks(pool_, count, [&](std::int64_t begin, std::int64_t end) {
    std::uint32_t words[kWords];
    const std::uint32_t threshold = drop_threshold;
    const float keep_scale = scale;
    for (std::int64_t i0 = begin; i0 < end; i0 += kWords) {
      const std::int64_t n = std::min(kWords, end - i0);
      rng::philox_blocks(key, static_cast<std::uint64_t>(i0) >> 2, draw, (n + 3) / 4, words);
      // Locals and a select the compiler turns into blends: captured pointers would be reloaded
      // after every store (it may alias them), and a branch per element would keep the loop scalar
      // and mispredict on the random mask (a quarter of the time at rate 0.25).
      const float* __restrict in = x + i0;
      float* __restrict out = y + i0;
      std::uint8_t* __restrict keep_mask = mask + i0;
      for (std::int64_t j = 0; j < n; ++j) {
        const std::uint32_t keep = (words[j] >> 8) >= threshold ? 1u : 0u;
        out[j] = kept_or_zero(in[j] * keep_scale, keep);
        keep_mask[j] = static_cast<std::uint8_t>(keep);
      }
    }
  });
}

void CpuOps::dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask,
                              const float* dy, float* dx) {
  for_blocks(pool_, count, [&](std::int64_t begin, std::int64_t end) {
    // A select, as in dropout_forward: a branch per element would keep this loop scalar and
    // mispredict on the random mask. No __restrict on in and out: dx may be dy.
    const std::uint8_t* keep = mask + begin;
    const float* in = dy + begin;
    float* out = dx + begin;
    const float keep_scale = scale;
    for (std::int64_t i = 0; i < end - begin; ++i) {
      out[i] = kept_or_zero(in[i] * keep_scale, keep[i] != 0 ? 1u : 0u);
    }
  });
}

}  // namespace ra::backend::cpu
