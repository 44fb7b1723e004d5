#include "backend/cuda/op_execution.h"

#include <array>
#include <utility>

#include "backend/cuda/cuda_check.h"

namespace ra::backend::cuda {

void PendingLedgerEntry::record_once(std::vector<LedgerEntry>& ledger) {
  if (recorded_) return;
  ledger.push_back(entry_);
  recorded_ = true;
}

std::string execution_failure_message(const LedgerEntry& op, const std::string& call,
                                      const std::string& status_name,
                                      const std::string& library_text) {
  std::string message = op.layer + " " + op.direction + ": " + op.algorithm + " failed to run (" +
                        call + ": " + status_name;
  if (!library_text.empty()) message += "; cuDNN: " + library_text;
  message += ")";
  if (op.chosen_by == "pinned" || op.chosen_by == "heuristic") {
    // As for a pinned algorithm the shape does not support (conv_plan.cpp): no fallback.
    message += "; no other algorithm is substituted";
  }
  return message;
}

std::string cudnn_last_error_text() {
  // cudnn_graph.h: void cudnnGetLastErrorString(char *message, size_t max_size), a
  // NUL-terminated string of at most max_size bytes. Terminated here too, whatever it wrote.
  std::array<char, 1024> text{};
  cudnnGetLastErrorString(text.data(), text.size());
  text.back() = '\0';
  return std::string(text.data());
}

void check_cudnn_execution(cudnnStatus_t status, const char* call, const LedgerEntry& op) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw CudaError(
      execution_failure_message(op, call, cudnn_status_name(status), cudnn_last_error_text()));
}

void check_cublas_execution(cublasStatus_t status, const char* call, const LedgerEntry& op) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(execution_failure_message(op, call, cublas_status_name(status), ""));
}

}  // namespace ra::backend::cuda
