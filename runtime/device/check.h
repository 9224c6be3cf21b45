// Checked CUDA, cuBLAS and NCCL calls. Every call of the device path goes
// through one of these macros; a failure throws with the call, file:line and
// the API's own error string, e.g.
//   runtime/device/buffer.h:40: cudaMalloc(&p, bytes): out of memory (cudaErrorMemoryAllocation)
// CUDA and cuBLAS failures throw DeviceError (the GPU is unusable: dstrain
// exits and dslaunch reports the rank); NCCL failures throw CommError, so the
// trainer treats them like any lost peer (abort, rebuild next generation).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "runtime/device_failure.h"

namespace ds::rt::dev {

class DeviceError : public DeviceFailure {
 public:
  explicit DeviceError(const std::string& what) : DeviceFailure(what) {}
};

[[noreturn]] void ThrowCuda(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void ThrowCublas(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void ThrowNccl(ncclResult_t result, const char* call, const char* file, int line);

// "file:line: call: message": what the three throw (tests read it).
std::string DescribeFailure(const char* call, const char* file, int line, const std::string& message);

}  // namespace ds::rt::dev

#define DS_CUDA(call)                                                              \
  do {                                                                             \
    const cudaError_t ds_cuda_error_ = (call);                                     \
    if (ds_cuda_error_ != cudaSuccess)                                             \
      ::ds::rt::dev::ThrowCuda(ds_cuda_error_, #call, __FILE__, __LINE__);         \
  } while (0)

#define DS_CUBLAS(call)                                                            \
  do {                                                                             \
    const cublasStatus_t ds_cublas_status_ = (call);                               \
    if (ds_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                \
      ::ds::rt::dev::ThrowCublas(ds_cublas_status_, #call, __FILE__, __LINE__);    \
  } while (0)

// ncclInProgress is not a failure: a non-blocking communicator's call was
// queued (its completion is polled with ncclCommGetAsyncError).
#define DS_NCCL(call)                                                              \
  do {                                                                             \
    const ncclResult_t ds_nccl_result_ = (call);                                   \
    if (ds_nccl_result_ != ncclSuccess && ds_nccl_result_ != ncclInProgress)       \
      ::ds::rt::dev::ThrowNccl(ds_nccl_result_, #call, __FILE__, __LINE__);        \
  } while (0)

// After a kernel launch: a bad launch configuration is reported here, at
// the launch, not at the next synchronizing call; taken (cudaGetLastError),
// so a later launch is not blamed for it.
#define DS_CUDA_LAUNCHED() DS_CUDA(cudaGetLastError())
