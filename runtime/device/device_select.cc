#include "runtime/device/device_select.h"

#include <fmt/format.h>

#include "runtime/device/check.h"
#include "runtime/device/device_info.h"
#include "runtime/device/device_zero_engine.h"

namespace ds::rt::dev {

Result<DeviceChoice> ChooseDevice(const std::string& requested, int local_rank) {
  DeviceChoice choice;
  choice.description = "cpu";
  if (requested == "cpu") return choice;
  const GpuSurvey survey = SurveyGpus();
  if (survey.gpus.empty()) {
    if (requested == "cuda")
      return Status::InvalidArgument(
          fmt::format("trainer.device is cuda, but this node has {}; use device: cpu", survey.why_none));
    return choice;  // unset: the CPU, quietly
  }
  const int n = static_cast<int>(survey.gpus.size());
  choice.cuda = true;
  choice.index = (local_rank % n + n) % n;
  try {
    DS_CUDA(cudaSetDevice(choice.index));
  } catch (const DeviceError& e) {
    return Status::InvalidArgument(fmt::format("GPU {}: {}", choice.index, e.what()));
  }
  choice.description = fmt::format("cuda:{} {}", choice.index, Describe(survey.gpus[choice.index]));
  return choice;
}

std::function<std::unique_ptr<Engine>(const Mlp&, const Optimizer&, const ZeroOptions&)> DeviceEngines(
    DeviceComm& comm, bool allow_tf32) {
  return [&comm, allow_tf32](const Mlp& model, const Optimizer& optimizer, const ZeroOptions& options) {
    return std::unique_ptr<Engine>(std::make_unique<DeviceZeroEngine>(model, comm, optimizer, options, allow_tf32));
  };
}

}  // namespace ds::rt::dev
