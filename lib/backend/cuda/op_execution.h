#pragma once
// Running a chosen library algorithm: its ledger entry is recorded only after the call that runs
// it returned success, and a failing call throws a CudaError that names the op (geometry key,
// direction), the algorithm, the call, its status and the library's own explanation
// (cudnnGetLastErrorString). Used by the convolutions (cuda_conv.cpp); made for the dense
// products too (cuBLAS has no last-error text: the status alone).
//
// "Ran" means the library accepted and queued the work (its call returned success): a fault while
// the kernel runs surfaces at the stream's next synchronization, as for every kernel.
#include <cublas_v2.h>
#include <cudnn.h>

#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/ledger.h"

namespace ra::backend::cuda {

// A ledger entry made when its algorithm is chosen, waiting for the algorithm to run.
class PendingLedgerEntry {
 public:
  PendingLedgerEntry() = default;
  explicit PendingLedgerEntry(LedgerEntry entry) : entry_(std::move(entry)) {}
  const LedgerEntry& entry() const noexcept { return entry_; }
  bool recorded() const noexcept { return recorded_; }
  // Appends the entry the first time, after a successful run; later calls do nothing.
  void record_once(std::vector<LedgerEntry>& ledger);

 private:
  LedgerEntry entry_;
  bool recorded_ = false;
};

// "<layer> <direction>: <algorithm> failed to run (<call>: <status>; cuDNN: <library_text>)",
// the library part left out when empty. Pure, tested on the host.
std::string execution_failure_message(const LedgerEntry& op, const std::string& call,
                                      const std::string& status_name,
                                      const std::string& library_text);

// What cuDNN recorded about the last failure of this thread (cudnnGetLastErrorString), "" when
// nothing. A host-side query: needs no device.
std::string cudnn_last_error_text();

// Throw CudaError(execution_failure_message(...)) unless `status` is success.
void check_cudnn_execution(cudnnStatus_t status, const char* call, const LedgerEntry& op);
void check_cublas_execution(cublasStatus_t status, const char* call, const LedgerEntry& op);

}  // namespace ra::backend::cuda
