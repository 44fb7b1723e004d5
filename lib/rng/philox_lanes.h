#pragma once
// Philox4x32-10 over V::kLanes consecutive counters at once, written once for every vector type.
// Included only by philox_batch_{avx2,avx512}.cpp, each of which instantiates it with its own
// vector type V (in an anonymous namespace there, so the instantiation stays in that unit) inside
// its `#pragma GCC target` region: a template defined outside such a region would be compiled
// without the instruction set and could not inline the intrinsics.
//
// The 32 x 32 -> 64-bit products come from the even-lane multiply (vpmuludq) on the even lanes
// and on the odd lanes shifted down, then the high and low halves are blended back. Integer
// arithmetic only, so the words are philox_block's (tested per path).
//
// V provides: type T, constexpr int kLanes, load(p) and store(p, v) of kLanes aligned words,
// set1(x), mul_even(a, b) (the 64-bit products of the even 32-bit lanes), shift_down(a) and
// shift_up(a) (each 64-bit lane by 32 bits), blend_odd(even, odd) (odd lanes from `odd`), xor_(a,
// b).
#include <cstdint>

#include "rng/philox.h"

namespace ra::rng::philox_detail {

// The words of the kLanes blocks from `first`, as philox_blocks lays them out.
template <class V>
void philox_lane_group(PhiloxKey key, std::uint64_t first, std::uint64_t draw,
                       std::uint32_t* words) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  alignas(64) std::uint32_t lo[L], hi[L];
  for (int l = 0; l < L; ++l) {
    const std::uint64_t a = first + static_cast<std::uint64_t>(l);
    lo[l] = static_cast<std::uint32_t>(a);
    hi[l] = static_cast<std::uint32_t>(a >> 32);
  }
  T c0 = V::load(lo), c1 = V::load(hi);
  T c2 = V::set1(static_cast<std::uint32_t>(draw));
  T c3 = V::set1(static_cast<std::uint32_t>(draw >> 32));
  const T m0 = V::set1(kPhiloxMul0), m1 = V::set1(kPhiloxMul1);
  std::uint32_t k0 = key.k0, k1 = key.k1;
  for (int round = 0; round < 10; ++round) {
    // p = m * c as (hi, lo) per lane: even lanes from mul_even(c), odd lanes from c >> 32.
    const T e0 = V::mul_even(c0, m0), o0 = V::mul_even(V::shift_down(c0), m0);
    const T hi0 = V::blend_odd(V::shift_down(e0), o0), lo0 = V::blend_odd(e0, V::shift_up(o0));
    const T e1 = V::mul_even(c2, m1), o1 = V::mul_even(V::shift_down(c2), m1);
    const T hi1 = V::blend_odd(V::shift_down(e1), o1), lo1 = V::blend_odd(e1, V::shift_up(o1));
    const T n0 = V::xor_(V::xor_(hi1, c1), V::set1(k0));
    const T n2 = V::xor_(V::xor_(hi0, c3), V::set1(k1));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kPhiloxWeyl0;
    k1 += kPhiloxWeyl1;
  }
  alignas(64) std::uint32_t w0[L], w1[L], w2[L], w3[L];
  V::store(w0, c0);
  V::store(w1, c1);
  V::store(w2, c2);
  V::store(w3, c3);
  for (int l = 0; l < L; ++l) {
    words[4 * l] = w0[l], words[4 * l + 1] = w1[l], words[4 * l + 2] = w2[l],
              words[4 * l + 3] = w3[l];
  }
}

// `groups` consecutive lane groups: the loop sits inside the vector unit, since a function of
// another instruction set cannot be inlined into the dispatcher.
template <class V>
void philox_lane_groups(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t groups,
                        std::uint32_t* words) {
  for (std::int64_t g = 0; g < groups; ++g) {
    philox_lane_group<V>(key, first + static_cast<std::uint64_t>(g * V::kLanes), draw,
                         words + 4 * V::kLanes * g);
  }
}

}  // namespace ra::rng::philox_detail
