// ForwardingDeviceComm: a DeviceComm for the device engine's tests (gpu
// label) that passes every call on to `inner` (as LevelDB's EnvWrapper
// does); a test's wrapper overrides only the calls it watches. Header-only;
// not thread-safe (the engine calls from one thread).
#pragma once

#include <vector>

#include "runtime/device/device_comm.h"

namespace ds::rt::dev::testing {

class ForwardingDeviceComm : public DeviceComm {
 public:
  explicit ForwardingDeviceComm(DeviceComm& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  cudaStream_t stream() const override { return inner_.stream(); }
  void AllReduceSum(void* data, size_t n, Precision fmt, cudaStream_t after) override {
    inner_.AllReduceSum(data, n, fmt, after);
  }
  void AllReduceSum(double* data, size_t n, cudaStream_t after) override { inner_.AllReduceSum(data, n, after); }
  void ReduceScatter(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                     cudaStream_t after) override {
    inner_.ReduceScatter(in, out, counts, fmt, after);
  }
  void AllGather(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                 cudaStream_t after) override {
    inner_.AllGather(in, out, counts, fmt, after);
  }
  void Join(cudaStream_t s) override { inner_.Join(s); }
  void Synchronize(cudaStream_t s) override { inner_.Synchronize(s); }
  void WaitEvent(cudaEvent_t e) override { inner_.WaitEvent(e); }

 private:
  DeviceComm& inner_;
};

}  // namespace ds::rt::dev::testing
