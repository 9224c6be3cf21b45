// Checked CUDA, cuBLAS and NCCL calls. Every call of the device path goes
// through one of these macros; a failure throws with the call, file:line and
// the API's own error string, e.g.
//   runtime/device/buffer.h:40: cudaMalloc(&p, bytes): out of memory (cudaErrorMemoryAllocation)
// CUDA and cuBLAS failures throw DeviceError (the GPU is unusable: dstrain
// exits 4 and dslaunch reports the rank without restarting); NCCL failures
// throw CommError, so the trainer treats them like any lost peer (abort,
// rebuild next generation). Thread-safe (CUDA's last error is per thread).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "runtime/engine/device_failure.h"

namespace ds::rt::dev {

class DeviceError : public DeviceFailure {
 public:
  explicit DeviceError(const std::string& what) : DeviceFailure(what) {}
};

[[noreturn]] void ThrowCuda(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void ThrowCublas(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void ThrowNccl(ncclResult_t result, const char* call, const char* file, int line);

// Takes the thread's last CUDA error without looking at it (DS_CUDA_LAUNCH).
void DropStaleError();

// cudaStreamQuery without its side effect: a stream still running answers
// cudaErrorNotReady, which the runtime also records as the thread's last
// error; it is taken here, where it is produced (PyTorch does the same), so
// no later check reads it. Returns cudaSuccess, cudaErrorNotReady or the
// stream's error (which stays recorded: a real error is the caller's to report).
cudaError_t QueryStream(cudaStream_t s);
// The same for cudaEventQuery: has the work before the event's record run?
cudaError_t QueryEvent(cudaEvent_t e);

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

// A kernel launch, checked: DS_CUDA_LAUNCH(Kernel<<<grid, block, 0, s>>>(args)).
// A bad launch configuration is reported here, at the launch, not at the
// next synchronizing call. The check reads only what this launch caused:
// the thread's last error is taken (and dropped) just before the launch, so
// a stale, harmless one (the cudaErrorNotReady a stream query leaves, a
// failed free in a destructor) is not blamed on an innocent kernel. A sticky
// error (the context is gone) fails the launch itself and is still reported.
#define DS_CUDA_LAUNCH(...)                                                        \
  do {                                                                             \
    ::ds::rt::dev::DropStaleError();                                               \
    __VA_ARGS__;                                                                   \
    const cudaError_t ds_launch_error_ = cudaGetLastError();                       \
    if (ds_launch_error_ != cudaSuccess)                                           \
      ::ds::rt::dev::ThrowCuda(ds_launch_error_, #__VA_ARGS__, __FILE__, __LINE__); \
  } while (0)
