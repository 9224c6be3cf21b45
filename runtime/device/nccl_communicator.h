// NcclCommunicator: the Communicator on NCCL (GPUs), in CUDA builds only. The algorithms are NCCL's. Bootstraps through the
// same gloo::rendezvous::Store as Gloo: rank 0 publishes its ncclUniqueId.
//
// Its Communicator methods take host buffers: every collective stages
// through pinned host memory and a device buffer (copy in, collective, copy
// out) on one CUDA stream (the CPU trainer with backend: nccl). Pinned, so
// no copy blocks the host inside CUDA: the only wait is the bounded one
// below. The device trainer passes device buffers through
// runtime/device/device_comm.h instead. Uneven reduce-scatter / all-gather
// pieces are padded to the largest piece (NCCL needs equal counts).
//
// Its GPU: the communicator remembers `NcclOptions::device` and makes it
// current on whichever thread calls it (the CPU engine's comm worker, the
// main thread), before it allocates, copies or launches.
//
// Timeouts and failures: the communicator is non-blocking (ncclConfig_t.
// blocking = 0); each call polls the stream and ncclCommGetAsyncError until
// `timeout`. NCCL's error or the deadline aborts the communicator and
// throws CommError; a CUDA error (this GPU's fault: a kernel's illegal
// address) aborts it and throws dev::DeviceError (wait_verdict.h). The
// destructor aborts while an exception unwinds, else finalizes within the
// timeout (and aborts when that fails): it never waits without a bound.
// Not thread-safe: one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "runtime/comm/communicator.h"

namespace gloo::rendezvous {
class Store;
}

namespace ds::rt {

struct NcclOptions {
  int device = 0;                              // CUDA device (LOCAL_RANK)
  std::chrono::milliseconds timeout{60000};    // per collective and for init
};

class NcclCommunicator : public Communicator {
 public:
  // Throws CommError when NCCL fails or init times out, dev::DeviceError
  // when CUDA fails (the device cannot be set, memory).
  static std::unique_ptr<NcclCommunicator> Connect(gloo::rendezvous::Store& store, int rank,
                                                   int size, const NcclOptions& options);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

  void AllReduceSum(float* data, size_t n) override;
  void AllReduceSum(uint16_t* data, size_t n, Half16 format) override;
  void AllReduceSum(double* data, size_t n) override;
  void ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) override;
  void ReduceScatter(uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                     Half16 format) override;
  void AllGather(const float* in, float* out, const std::vector<size_t>& counts) override;
  void AllGather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts) override;
  void Broadcast(void* data, size_t n, int root) override;
  void Barrier() override;

  // For the device path (runtime/device/device_comm.h), which queues NCCL
  // calls on device buffers itself: the communicator and its stream; Check
  // turns an NCCL result into the abort-and-throw above (ncclInProgress is
  // fine); WaitFor waits for any stream `s` against the collective timeout,
  // watching NCCL's asynchronous error, and aborts and throws on failure;
  // WaitForEvent the same for the work queued before event `e`.
  ncclComm_t handle() const;
  cudaStream_t stream() const;
  void Check(ncclResult_t result, const char* what);
  void WaitFor(cudaStream_t s, const char* what);
  void WaitForEvent(cudaEvent_t e, const char* what);

  struct Impl;

 private:
  NcclCommunicator(std::unique_ptr<Impl> impl, int rank, int size,
                   std::chrono::milliseconds timeout);
  std::unique_ptr<Impl> impl_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ds::rt
