// The NCCL communicator's wait classification without a GPU (unit label):
// a CUDA error while waiting is the device's fault, NCCL's asynchronous
// error is the communicator's, the deadline only when nothing failed.
#include "runtime/device/wait_verdict.h"

#include <catch2/catch.hpp>

namespace ds::rt::dev {
namespace {

TEST_CASE("wait verdict: a CUDA error while waiting is a device fault, never a lost peer", "[unit]") {
  CHECK(Judge(cudaErrorIllegalAddress, ncclSuccess, false) == WaitVerdict::kDeviceFault);
  CHECK(Judge(cudaErrorECCUncorrectable, ncclInProgress, false) == WaitVerdict::kDeviceFault);
  // Even when NCCL has failed too and the deadline is past: the context is gone.
  CHECK(Judge(cudaErrorLaunchFailure, ncclRemoteError, true) == WaitVerdict::kDeviceFault);
}

TEST_CASE("wait verdict: NCCL's asynchronous error is a communication failure", "[unit]") {
  CHECK(Judge(cudaErrorNotReady, ncclRemoteError, false) == WaitVerdict::kCommFailed);
  CHECK(Judge(cudaErrorNotReady, ncclSystemError, true) == WaitVerdict::kCommFailed);
}

TEST_CASE("wait verdict: done, pending, or timed out only past the deadline", "[unit]") {
  CHECK(Judge(cudaSuccess, ncclSuccess, false) == WaitVerdict::kDone);
  CHECK(Judge(cudaSuccess, ncclSuccess, true) == WaitVerdict::kDone);
  CHECK(Judge(cudaErrorNotReady, ncclSuccess, false) == WaitVerdict::kPending);
  CHECK(Judge(cudaErrorNotReady, ncclInProgress, false) == WaitVerdict::kPending);
  CHECK(Judge(cudaErrorNotReady, ncclSuccess, true) == WaitVerdict::kTimedOut);
}

}  // namespace
}  // namespace ds::rt::dev
