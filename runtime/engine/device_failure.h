// DeviceFailure: a GPU failure (CUDA, cuBLAS, a kernel's fault seen while
// waiting for a collective) as the CUDA-free part of dstrain sees it. The
// GPU plugin throws its subclass dev::DeviceError (runtime/device/check.h);
// dstrain reports it and exits 4 (common/dstrain_exit.h): dslaunch leaves
// the host out of any restart. NCCL's own failures are CommErrors, as any
// lost peer.
#pragma once

#include <stdexcept>
#include <string>

namespace ds::rt {

class DeviceFailure : public std::runtime_error {
 public:
  explicit DeviceFailure(const std::string& what) : std::runtime_error(what) {}
  ~DeviceFailure() override;  // out of line (device_plugin.cc): one type_info, dstrain's, for both sides
};

}  // namespace ds::rt
