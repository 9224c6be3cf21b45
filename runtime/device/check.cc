#include "runtime/device/check.h"

#include <fmt/format.h>

#include "runtime/comm/communicator.h"

namespace ds::rt::dev {

void DropStaleError() { (void)cudaGetLastError(); }

cudaError_t QueryStream(cudaStream_t s) {
  const cudaError_t e = cudaStreamQuery(s);
  if (e == cudaErrorNotReady) (void)cudaGetLastError();  // not an error: do not leave it behind
  return e;
}

cudaError_t QueryEvent(cudaEvent_t event) {
  const cudaError_t e = cudaEventQuery(event);
  if (e == cudaErrorNotReady) (void)cudaGetLastError();
  return e;
}

std::string DescribeFailure(const char* call, const char* file, int line, const std::string& message) {
  return fmt::format("{}:{}: {}: {}", file, line, call, message);
}

void ThrowCuda(cudaError_t error, const char* call, const char* file, int line) {
  throw DeviceError(DescribeFailure(
      call, file, line, fmt::format("{} ({})", cudaGetErrorString(error), cudaGetErrorName(error))));
}

void ThrowCublas(cublasStatus_t status, const char* call, const char* file, int line) {
  throw DeviceError(DescribeFailure(
      call, file, line, fmt::format("{} ({})", cublasGetStatusString(status), cublasGetStatusName(status))));
}

void ThrowNccl(ncclResult_t result, const char* call, const char* file, int line) {
  std::string message = ncclGetErrorString(result);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') message += fmt::format(" ({})", last);
  throw CommError(DescribeFailure(call, file, line, message));
}

}  // namespace ds::rt::dev
