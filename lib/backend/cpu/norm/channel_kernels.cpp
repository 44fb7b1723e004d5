// The portable (baseline x86-64) instantiation of the per-channel kernels and the dispatch by
// instruction set.
#include "backend/cpu/norm/channel_kernels.h"

#include <string>

#include "backend/cpu/norm/channel_lanes.h"
#include "core/error.h"

namespace ra::backend::cpu {
namespace {

struct ChannelPortable {};
constexpr ChannelKernels kPortable = channel_lanes::table<ChannelPortable, ChannelKernels>();

}  // namespace

const ChannelKernels& channel_kernels(Isa isa) {
  if (!isa_supported(isa)) {
    throw RuntimeFailure(std::string("channel kernels: this CPU does not run ") + isa_name(isa));
  }
  switch (isa) {
    case Isa::portable:
      return kPortable;
    case Isa::avx2_fma:
      return channel_detail::avx2_kernels();
    case Isa::avx512_fma:
      return channel_detail::avx512_kernels();
  }
  return kPortable;
}

const ChannelKernels& channel_kernels() {
  static const ChannelKernels& active = channel_kernels(active_isa());
  return active;
}

}  // namespace ra::backend::cpu
