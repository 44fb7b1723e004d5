#pragma once
// Many consecutive Philox4x32-10 blocks at once, for the host: the words of philox_block(key, a,
// draw) for a = first, first + 1, ..., first + blocks - 1, written as words[4 * (a - first) + j].
// The same words as philox_block (tested); computed 16 blocks at a time in structure-of-arrays
// form so the compiler vectorises the 32 x 32 -> 64-bit multiplies, and cloned per instruction
// set (AVX-512, AVX2, baseline) with the best chosen at load time -- integer arithmetic, so every
// clone gives the same words.
#include <cstdint>

#include "rng/philox.h"

namespace ra::rng {

void philox_blocks(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks,
                   std::uint32_t* words);

}  // namespace ra::rng
