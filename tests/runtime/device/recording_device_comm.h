// RecordingDeviceComm: a DeviceComm for the device engine's tests (gpu
// label) that writes down the calls the engine makes, in order, and passes
// each on. Header-only; not thread-safe (the engine calls from one thread).
#pragma once

#include <string>
#include <vector>

#include "tests/runtime/device/forwarding_device_comm.h"

namespace ds::rt::dev::testing {

// A DeviceComm that writes down each call ("G336": an all-gather of 336
// elements in all, "R65" a reduce-scatter, "A1" an all-reduce, "J" a Join,
// "S" a Synchronize, "W" a WaitEvent) and passes it on to `inner`.
class RecordingDeviceComm final : public ForwardingDeviceComm {
 public:
  using ForwardingDeviceComm::ForwardingDeviceComm;
  std::vector<std::string> calls;

  void AllReduceSum(void* data, size_t n, Precision fmt, cudaStream_t after) override {
    calls.push_back("A" + std::to_string(n));
    ForwardingDeviceComm::AllReduceSum(data, n, fmt, after);
  }
  void AllReduceSum(double* data, size_t n, cudaStream_t after) override {
    calls.push_back("A" + std::to_string(n));
    ForwardingDeviceComm::AllReduceSum(data, n, after);
  }
  void ReduceScatter(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                     cudaStream_t after) override {
    calls.push_back("R" + std::to_string(Total(counts)));
    ForwardingDeviceComm::ReduceScatter(in, out, counts, fmt, after);
  }
  void AllGather(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                 cudaStream_t after) override {
    calls.push_back("G" + std::to_string(Total(counts)));
    ForwardingDeviceComm::AllGather(in, out, counts, fmt, after);
  }
  void Join(cudaStream_t s) override {
    calls.push_back("J");
    ForwardingDeviceComm::Join(s);
  }
  void Synchronize(cudaStream_t s) override {
    calls.push_back("S");
    ForwardingDeviceComm::Synchronize(s);
  }
  void WaitEvent(cudaEvent_t e) override {
    calls.push_back("W");
    ForwardingDeviceComm::WaitEvent(e);
  }

 private:
  static size_t Total(const std::vector<size_t>& counts) {
    size_t t = 0;
    for (size_t c : counts) t += c;
    return t;
  }
};

}  // namespace ds::rt::dev::testing
