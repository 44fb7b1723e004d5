// Philox4x32-10 over many counters at once: the dispatch between the vector paths
// (philox_batch_{avx2,avx512}.cpp, one template in philox_lanes.h) and the scalar philox_block.
// The compiler's own vectoriser did not manage this loop (GCC 12 left it scalar), hence the
// intrinsics there.
#include <string>

#include "core/error.h"
#include "rng/philox_batch.h"
#include "rng/philox_batch_detail.h"

#if defined(__x86_64__)
#define RA_PHILOX_X86 1
#endif

namespace ra::rng {
namespace philox_detail {
namespace {

void scalar_blocks(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks,
                   std::uint32_t* words) {
  for (std::int64_t i = 0; i < blocks; ++i) {
    const PhiloxBlock block = philox_block(key, first + static_cast<std::uint64_t>(i), draw);
    for (int j = 0; j < 4; ++j) words[4 * i + j] = block.v[j];
  }
}

// philox_blocks_on without the support check (the caller has made it).
void run_path(PhiloxPath path, PhiloxKey key, std::uint64_t first, std::uint64_t draw,
              std::int64_t blocks, std::uint32_t* words) {
  std::int64_t i = 0;
#ifdef RA_PHILOX_X86
  if (path == PhiloxPath::avx512) {
    const std::int64_t groups = blocks / kAvx512Lanes;
    avx512_groups(key, first, draw, groups, words);
    i = groups * kAvx512Lanes;
  } else if (path == PhiloxPath::avx2) {
    const std::int64_t groups = blocks / kAvx2Lanes;
    avx2_groups(key, first, draw, groups, words);
    i = groups * kAvx2Lanes;
  }
#else
  (void)path;
#endif
  scalar_blocks(key, first + static_cast<std::uint64_t>(i), draw, blocks - i, words + 4 * i);
}

}  // namespace

const char* philox_path_name(PhiloxPath path) {
  switch (path) {
    case PhiloxPath::scalar:
      return "scalar";
    case PhiloxPath::avx2:
      return "avx2";
    case PhiloxPath::avx512:
      return "avx512";
  }
  return "unknown";
}

bool philox_path_supported(PhiloxPath path) {
  switch (path) {
    case PhiloxPath::scalar:
      return true;
#ifdef RA_PHILOX_X86
    // __builtin_cpu_supports also checks that the OS saves the wider registers.
    case PhiloxPath::avx2:
      return __builtin_cpu_supports("avx2");
    case PhiloxPath::avx512:
      return __builtin_cpu_supports("avx512f");
#else
    case PhiloxPath::avx2:
    case PhiloxPath::avx512:
      return false;
#endif
  }
  return false;
}

PhiloxPath best_philox_path() {
  if (philox_path_supported(PhiloxPath::avx512)) return PhiloxPath::avx512;
  if (philox_path_supported(PhiloxPath::avx2)) return PhiloxPath::avx2;
  return PhiloxPath::scalar;
}

void philox_blocks_on(PhiloxPath path, PhiloxKey key, std::uint64_t first, std::uint64_t draw,
                      std::int64_t blocks, std::uint32_t* words) {
  if (!philox_path_supported(path)) {
    throw RuntimeFailure(std::string("philox_blocks: this CPU cannot run the ") +
                         philox_path_name(path) + " path");
  }
  run_path(path, key, first, draw, blocks, words);
}

}  // namespace philox_detail

void philox_blocks(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks,
                   std::uint32_t* words) {
  // Chosen once per process: the CPU does not change under it.
  static const philox_detail::PhiloxPath path = philox_detail::best_philox_path();
  philox_detail::run_path(path, key, first, draw, blocks, words);
}

}  // namespace ra::rng
