#include "runtime/device/device_info.h"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

namespace ds::rt::dev {

GpuSurvey SurveyGpus() {
  GpuSurvey survey;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    survey.why_none = fmt::format("no usable GPU: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
    cudaGetLastError();  // reset the runtime's last error: later checked calls start clean
    return survey;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      cudaGetLastError();  // skipped, not carried into later checked calls
      continue;
    }
    survey.gpus.push_back({i, p.name, p.major, p.minor, p.totalGlobalMem, p.multiProcessorCount});
  }
  if (survey.gpus.empty()) survey.why_none = "no usable GPU: the CUDA runtime lists none";
  return survey;
}

std::string Describe(const GpuInfo& g) {
  return fmt::format("{} (sm_{}{}, {:.1f} GiB, {} SMs)", g.name, g.sm_major, g.sm_minor,
                     static_cast<double>(g.memory) / (1 << 30), g.multiprocessors);
}

}  // namespace ds::rt::dev
