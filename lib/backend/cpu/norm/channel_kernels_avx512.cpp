// The per-channel kernels (channel_lanes.h) compiled for AVX-512F: the 16 lanes in one 512-bit
// register. The same operations as the portable code: the same bits.
#include "backend/cpu/norm/channel_kernels.h"

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
#include "backend/cpu/norm/channel_lanes.h"

namespace ra::backend::cpu::channel_detail {
namespace {

struct ChannelAvx512 {};
constexpr ChannelKernels kAvx512Kernels = channel_lanes::table<ChannelAvx512, ChannelKernels>();

}  // namespace

const ChannelKernels& avx512_kernels() {
  return kAvx512Kernels;
}

}  // namespace ra::backend::cpu::channel_detail
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
