#include "backend/cpu/cpu_ops.h"

#include "core/error.h"

namespace ra::backend {
namespace {

int checked_threads(int threads) {
  if (threads < 1) {
    throw InputError("cpu backend: threads must be at least 1, got " + std::to_string(threads));
  }
  return threads;
}

}  // namespace

CpuOps::CpuOps(int threads) : pool_(checked_threads(threads)), scratch_(pool_.threads()) {}

std::unique_ptr<Ops> make_cpu_ops(int threads) {
  return std::make_unique<CpuOps>(threads);
}

}  // namespace ra::backend
