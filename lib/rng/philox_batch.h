#pragma once
// Many consecutive Philox4x32-10 blocks at once, for the host: the words of philox_block(key, a,
// draw) for a = first, first + 1, ..., first + blocks - 1, written as words[4 * (a - first) + j].
// The same words as philox_block (tested, on every path the CPU runs); 16 (AVX-512) or 8 (AVX2)
// counters at a time in vector lanes, the path chosen once from the CPU, scalar otherwise --
// integer arithmetic, so every path gives the same words (paths: philox_batch_detail.h).
#include <cstdint>

#include "rng/philox.h"

namespace ra::rng {

void philox_blocks(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks,
                   std::uint32_t* words);

}  // namespace ra::rng
