// The device path's error reporting and GPU survey, without a GPU (unit
// label; runs in every CUDA build): messages name file:line, the call and
// the API's own error string; NCCL failures are CommErrors; no GPU is an
// empty survey with a reason, not a crash.
#include "runtime/device/check.h"

#include <catch2/catch.hpp>

#include <string>

#include "runtime/comm/communicator.h"
#include "runtime/device/device_info.h"

namespace ds::rt::dev {
namespace {

template <typename E, typename Fn>
std::string ThrownBy(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST_CASE("device checks: CUDA and cuBLAS failures throw DeviceError with file:line and the API's words", "[unit]") {
  const std::string cuda = ThrownBy<DeviceError>([] { DS_CUDA(cudaErrorMemoryAllocation); });
  CHECK(cuda.find("check_test.cc:") != std::string::npos);
  CHECK(cuda.find(": cudaErrorMemoryAllocation: out of memory (cudaErrorMemoryAllocation)") != std::string::npos);
  const std::string blas = ThrownBy<DeviceError>([] { DS_CUBLAS(CUBLAS_STATUS_NOT_INITIALIZED); });
  CHECK(blas.find("CUBLAS_STATUS_NOT_INITIALIZED") != std::string::npos);
  CHECK(blas.find("check_test.cc:") != std::string::npos);
  // Success passes through.
  DS_CUDA(cudaSuccess);
  DS_CUBLAS(CUBLAS_STATUS_SUCCESS);
}

TEST_CASE("device checks: an NCCL failure is a CommError; ncclInProgress is not a failure", "[unit]") {
  const std::string nccl = ThrownBy<CommError>([] { DS_NCCL(ncclInvalidArgument); });
  CHECK(nccl.find("check_test.cc:") != std::string::npos);
  CHECK(nccl.find("ncclInvalidArgument: ") != std::string::npos);
  CHECK(nccl.find("invalid argument") != std::string::npos);
  DS_NCCL(ncclInProgress);
  DS_NCCL(ncclSuccess);
}

TEST_CASE("device survey: GPUs, or none with the runtime's reason", "[unit]") {
  const GpuSurvey survey = SurveyGpus();
  if (survey.gpus.empty()) {
    CHECK(survey.why_none.find("no usable GPU") != std::string::npos);
    WARN(survey.why_none);
  } else {
    CHECK(survey.why_none.empty());
    CHECK(survey.gpus[0].sm_major >= 7);
    CHECK(Describe(survey.gpus[0]).find("sm_") != std::string::npos);
  }
}

}  // namespace
}  // namespace ds::rt::dev
