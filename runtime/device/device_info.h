// The GPUs this process can use (after CUDA_VISIBLE_DEVICES), asked of the
// CUDA runtime. No GPU is not an error: the survey is empty and says why
// (no driver, no device, a driver too old for this build), which the gpu
// tests print when they skip and dstrain prints when `trainer.device: cuda`
// cannot be honoured.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ds::rt::dev {

struct GpuInfo {
  int index = 0;               // CUDA device ordinal in this process
  std::string name;            // "NVIDIA H100 80GB HBM3"
  int sm_major = 0, sm_minor = 0;
  size_t memory = 0;           // bytes
  int multiprocessors = 0;
};

struct GpuSurvey {
  std::vector<GpuInfo> gpus;
  std::string why_none;        // set when gpus is empty
};

GpuSurvey SurveyGpus();

// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, 132 SMs)"
std::string Describe(const GpuInfo& gpu);

}  // namespace ds::rt::dev
