#pragma once
// An Ops that forwards every call to a CPU backend it owns: tests derive from it to observe calls
// (which kernel mode each op got) or to stand in for a device backend (a memory the host may not
// touch). The forwards themselves are backend::ForwardingOps'.
#include "backend/cpu/cpu_ops.h"
#include "backend/forwarding_ops.h"

namespace ra::test {

namespace detail {
// A base class, so that the CPU backend is built before the ForwardingOps that points at it.
struct OwnedCpuOps {
  explicit OwnedCpuOps(int threads) : cpu(threads) {}
  backend::cpu::CpuOps cpu;
};
}  // namespace detail

class ForwardingOps : private detail::OwnedCpuOps, public backend::ForwardingOps {
 public:
  explicit ForwardingOps(int threads = 2)
      : detail::OwnedCpuOps(threads), backend::ForwardingOps(cpu) {}
  std::string name() const override { return "forwarding"; }
};

}  // namespace ra::test
