#include "runtime/device/wait_verdict.h"

namespace ds::rt::dev {

WaitVerdict Judge(cudaError_t stream, ncclResult_t async, bool past_deadline) {
  if (stream != cudaSuccess && stream != cudaErrorNotReady) return WaitVerdict::kDeviceFault;
  if (stream == cudaSuccess) return WaitVerdict::kDone;
  if (async != ncclSuccess && async != ncclInProgress) return WaitVerdict::kCommFailed;
  if (past_deadline) return WaitVerdict::kTimedOut;
  return WaitVerdict::kPending;
}

}  // namespace ds::rt::dev
