// The per-channel kernels (channel_lanes.h) compiled for AVX2: the 16 lanes in two 256-bit
// registers. The same operations as the portable code: the same bits.
#include "backend/cpu/norm/channel_kernels.h"

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#include "backend/cpu/norm/channel_lanes.h"

namespace ra::backend::cpu::channel_detail {
namespace {

struct ChannelAvx2 {};
constexpr ChannelKernels kAvx2Kernels = channel_lanes::table<ChannelAvx2, ChannelKernels>();

}  // namespace

const ChannelKernels& avx2_kernels() {
  return kAvx2Kernels;
}

}  // namespace ra::backend::cpu::channel_detail
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
