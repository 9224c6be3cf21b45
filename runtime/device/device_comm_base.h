// DeviceCommBase: what every DeviceComm (device_comm.h) shares, the way its
// calls are ordered against the caller's streams. A collective starts after
// the work queued so far on the caller's `after` (After: an event on the
// device, no host wait); Join makes a stream wait for everything queued so
// far on stream(); the host waits for a stream or an event on this GPU
// alone (NcclDeviceComm bounds them by NCCL's collective timeout instead).
// The stream is its own, or one that outlives it (NCCL's communicator's).
// Used by NcclDeviceComm, StagedDeviceComm, SoloDeviceComm and the tests'
// fakes. Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "runtime/device/buffer.h"
#include "runtime/device/device_comm.h"

namespace ds::rt::dev {

class DeviceCommBase : public DeviceComm {
 public:
  cudaStream_t stream() const override { return stream_; }
  void Join(cudaStream_t s) override {
    done_.Record(stream_);
    done_.MakeWait(s);
  }
  void Synchronize(cudaStream_t s) override { DS_CUDA(cudaStreamSynchronize(s)); }
  void WaitEvent(cudaEvent_t e) override { DS_CUDA(cudaEventSynchronize(e)); }

 protected:
  // On a stream of its own.
  DeviceCommBase() : own_(std::make_unique<Stream>()), stream_(own_->get()) {}
  // On `stream`, which outlives it.
  explicit DeviceCommBase(cudaStream_t stream) : stream_(stream) {}

  // What is queued on stream() from now on waits for the work queued so far on `after`.
  void After(cudaStream_t after) {
    ready_.Record(after);
    ready_.MakeWait(stream_);
  }

 private:
  std::unique_ptr<Stream> own_;  // null on a borrowed stream
  cudaStream_t stream_;
  Event ready_, done_;
};

}  // namespace ds::rt::dev
