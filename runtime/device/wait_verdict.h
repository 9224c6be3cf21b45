// WaitVerdict: what one look at a collective in flight means, for the
// NcclCommunicator's deadline-bounded waits (nccl_communicator.h). Pure: the
// stream's answer (cudaStreamQuery), NCCL's asynchronous state
// (ncclCommGetAsyncError) and whether the deadline has passed go in, the
// verdict comes out; no device is touched, so it is unit-tested on a CPU.
// Thread-safe.
//
// The classification is the error policy of the device path: a CUDA error
// seen while waiting (an illegal address from a compute kernel, an ECC
// error) is the GPU's fault, not a peer's: the communicator is aborted, but
// the rank reports a device error (dstrain exits 4, which dslaunch does not
// restart), never a CommError that would make the launcher retry a sticky
// fault as if a peer were lost.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace ds::rt::dev {

enum class WaitVerdict {
  kDone,         // the stream has finished everything queued on it
  kPending,      // still running, within the deadline: look again
  kDeviceFault,  // CUDA reported an error: the GPU, not the network
  kCommFailed,   // NCCL reported an asynchronous error: a peer or the network
  kTimedOut,     // still running past the collective deadline
};

// `stream`: cudaStreamQuery's result; `async`: ncclCommGetAsyncError's.
// A CUDA error wins over everything (the context is gone); a finished
// stream is done even if NCCL has since failed (its data is complete; the
// next call sees the failure).
WaitVerdict Judge(cudaError_t stream, ncclResult_t async, bool past_deadline);

}  // namespace ds::rt::dev
