// Running a chosen algorithm (backend/cuda/op_execution.h) without a GPU: a ledger entry is
// recorded once and only when the op says it ran, and a failing library call throws a CudaError
// naming the op's geometry, direction, algorithm, the call, its status and cuDNN's own text.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/op_execution.h"
#include "core/error.h"
#include "support/text_lines.h"

namespace {

using namespace ra::backend::cuda;
using ra::test::contains;

LedgerEntry conv_entry(const char* chosen_by) {
  LedgerEntry e;
  e.layer = "conv 128x1x28x28 k32 3x3 s1 p0";
  e.direction = "backward_filter";
  e.algorithm = "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1";
  e.deterministic = true;
  e.math_type = "CUDNN_FMA_MATH";
  e.workspace_bytes = 256;
  e.chosen_by = chosen_by;
  return e;
}

}  // namespace

TEST_CASE("a pending ledger entry is recorded once, when the op ran", "[cuda][host]") {
  std::vector<LedgerEntry> ledger;
  PendingLedgerEntry pending(conv_entry("pinned"));
  CHECK_FALSE(pending.recorded());
  // A failed run throws before record_once: nothing is listed.
  CHECK_THROWS_AS(check_cudnn_execution(CUDNN_STATUS_NOT_SUPPORTED,
                                        "cudnnConvolutionBackwardFilter", pending.entry()),
                  CudaError);
  CHECK(ledger.empty());
  REQUIRE_NOTHROW(check_cudnn_execution(CUDNN_STATUS_SUCCESS, "cudnnConvolutionBackwardFilter",
                                        pending.entry()));
  pending.record_once(ledger);
  pending.record_once(ledger);  // later runs of the same choice add nothing
  REQUIRE(ledger.size() == 1);
  CHECK(pending.recorded());
  CHECK(ledger[0].algorithm == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1");
  CHECK(ledger[0].workspace_bytes == 256);
}

TEST_CASE("an execution failure names geometry, direction, algorithm, call, status and text",
          "[cuda][host]") {
  const std::string pinned = execution_failure_message(
      conv_entry("pinned"), "cudnnConvolutionBackwardFilter", "CUDNN_STATUS_NOT_SUPPORTED",
      "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: No valid engine configs");
  CHECK(
      pinned ==
      "conv 128x1x28x28 k32 3x3 s1 p0 backward_filter: CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 failed "
      "to run (cudnnConvolutionBackwardFilter: CUDNN_STATUS_NOT_SUPPORTED; cuDNN: "
      "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: No valid engine configs); no other algorithm is "
      "substituted");
  // No library text (cuBLAS, or cuDNN had none): no empty "cuDNN:" part; autotuned: no
  // "substituted" note (autotune already chose among all).
  LedgerEntry dense = conv_entry("autotuned");
  dense.layer = "dense 128x9216->128";
  dense.direction = "backward_weight";
  dense.algorithm = "cublasSgemm";
  CHECK(execution_failure_message(dense, "cublasSgemm", "CUBLAS_STATUS_EXECUTION_FAILED", "") ==
        "dense 128x9216->128 backward_weight: cublasSgemm failed to run (cublasSgemm: "
        "CUBLAS_STATUS_EXECUTION_FAILED)");

  // The throwing checks: a RuntimeFailure (exit 3) with the statuses' names.
  try {
    check_cudnn_execution(CUDNN_STATUS_NOT_SUPPORTED, "cudnnConvolutionForward",
                          conv_entry("pinned"));
    FAIL("no exception");
  } catch (const ra::RuntimeFailure& e) {
    CHECK(contains(e.what(), "conv 128x1x28x28 k32 3x3 s1 p0 backward_filter: "));
    CHECK(contains(e.what(), "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 failed to run"));
    CHECK(contains(e.what(), "cudnnConvolutionForward: CUDNN_STATUS_NOT_SUPPORTED"));
  }
  try {
    check_cublas_execution(CUBLAS_STATUS_EXECUTION_FAILED, "cublasSgemm", dense);
    FAIL("no exception");
  } catch (const ra::RuntimeFailure& e) {
    CHECK(contains(e.what(), "cublasSgemm: CUBLAS_STATUS_EXECUTION_FAILED"));
  }
  REQUIRE_NOTHROW(check_cublas_execution(CUBLAS_STATUS_SUCCESS, "cublasSgemm", dense));
  // cuDNN's last-error query is a host call: it answers (possibly "") without a device.
  REQUIRE_NOTHROW(cudnn_last_error_text());
}
