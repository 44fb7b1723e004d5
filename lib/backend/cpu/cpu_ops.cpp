#include "backend/cpu/cpu_ops.h"

#include "backend/cpu/simd/isa.h"
#include "core/error.h"

namespace ra::backend::cpu {
namespace {

int checked_threads(int threads) {
  if (threads < 1) {
    throw InputError("cpu backend: threads must be at least 1, got " + std::to_string(threads));
  }
  return threads;
}

}  // namespace

CpuOps::CpuOps(int threads) : pool_(checked_threads(threads)), scratch_(pool_.threads()) {}

std::optional<AlgorithmUsed> CpuOps::algorithm_used(const std::string& /*ledger_key*/,
                                                    const std::string& /*direction*/,
                                                    std::optional<KernelMode> mode) const {
  // The CPU chooses nothing by timing: the instruction set (cpu/simd/isa.h) picks the kernels,
  // the mode the reduction order (autotune runs the deterministic path: cpu/reduce/reduction.h).
  AlgorithmUsed used{std::string("cpu ") + cpu::active_isa_name(), true};
  if (mode == KernelMode::nondeterministic) {
    used.name += ", per-thread partials added in completion order";
    used.deterministic = false;
  } else if (mode) {
    used.name += ", fixed reduction tree";
  }
  return used;
}

std::unique_ptr<Ops> make_cpu_ops(int threads) {
  return std::make_unique<CpuOps>(threads);
}

}  // namespace ra::backend::cpu
