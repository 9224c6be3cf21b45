// DeviceComm: the collectives of the device engine, on device buffers.
// Calls are queued, never waited for on the host: each one first waits (an
// event, not a host synchronize) for the work queued so far on the caller's
// stream `after`, runs on the communicator's own stream, and the caller
// makes a stream wait for everything queued so far with Join. That is how
// gradient buckets are reduced while the backward pass goes on.
//
//   NcclDeviceComm    NCCL on the buffers themselves (backend: nccl). The
//                     communicator is the NcclCommunicator of this
//                     generation: non-blocking, every wait bounded by the
//                     collective timeout, aborted on any failure (CommError;
//                     a CUDA error seen while waiting: dev::DeviceError).
//   StagedDeviceComm  the hybrid mode (backend: gloo on a GPU): any host
//                     Communicator, the buffers copied through pinned host
//                     memory. Blocking; several ranks can share one GPU,
//                     which NCCL refuses.
//   SoloDeviceComm    world 1 without NCCL: every collective is the
//                     identity, done on the device (a reduce-scatter or
//                     all-gather is one device copy, an all-reduce nothing):
//                     no round trip through host memory, no host wait.
//
// Uneven per-rank counts (ZeroPartition's last pieces) are allowed. Not
// thread-safe; every rank makes the same calls in the same order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/numeric/half.h"

namespace ds::rt {
class NcclCommunicator;
}

namespace ds::rt::dev {

class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Where the collectives run: kernels queued here run after them (the
  // engine's post-processing of a reduce-scatter, for one).
  virtual cudaStream_t stream() const = 0;

  // data[0..n) becomes the sum over ranks.
  virtual void AllReduceSum(void* data, size_t n, Precision fmt, cudaStream_t after) = 0;
  virtual void AllReduceSum(double* data, size_t n, cudaStream_t after) = 0;
  // in[0..sum(counts)) summed over ranks; this rank's slice into out.
  virtual void ReduceScatter(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                             cudaStream_t after) = 0;
  // Rank r's in[0..counts[r]) into out in rank order, on every rank. `in`
  // may be this rank's own slice of `out`.
  virtual void AllGather(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                         cudaStream_t after) = 0;

  // `s` waits for every collective queued so far (no host wait).
  virtual void Join(cudaStream_t s) = 0;
  // The host waits for `s`, bounded by the collective timeout while
  // collectives are involved; throws CommError on a failure or timeout,
  // dev::DeviceError when the GPU faulted.
  virtual void Synchronize(cudaStream_t s) = 0;
  // The same for the work queued before event `e` was recorded.
  virtual void WaitEvent(cudaEvent_t e) = 0;
};

// NCCL on device buffers; `nccl` must outlive it.
std::unique_ptr<DeviceComm> MakeNcclDeviceComm(NcclCommunicator& nccl);

// The hybrid mode over a host communicator; `host` must outlive it.
std::unique_ptr<DeviceComm> MakeStagedDeviceComm(Communicator& host);

// World 1 on the device alone.
std::unique_ptr<DeviceComm> MakeSoloDeviceComm();

// Which of the three carries the device engine's collectives over a
// communicator: NCCL's own whenever the communicator is NCCL's (a one-rank
// NCCL works on device buffers already), the identity on the device at world
// 1 otherwise, the host staging only where there are peers. Pure.
enum class DeviceCommKind { kNccl, kSolo, kStaged };
DeviceCommKind ChooseDeviceComm(bool nccl, int world);

// The choice above, made: `comm` must outlive the result.
std::unique_ptr<DeviceComm> MakeDeviceComm(Communicator& comm);

}  // namespace ds::rt::dev
