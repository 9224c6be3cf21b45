// libdstrain_cuda.so's entry point: the DevicePlugin (runtime/engine/device_plugin.h)
// over this folder's device engine, collectives and GPU survey.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "runtime/device/check.h"
#include "runtime/device/device_comm.h"
#include "runtime/device/device_info.h"
#include "runtime/device/device_zero_engine.h"
#include "runtime/device/nccl_communicator.h"
#include "runtime/engine/device_plugin.h"

namespace ds::rt::dev {
namespace {

class CudaPlugin final : public DevicePlugin {
 public:
  Result<DeviceChoice> Choose(const std::string& requested, int local_rank, int local_world) override {
    const GpuSurvey survey = SurveyGpus();
    std::vector<int> gpus;
    for (const GpuInfo& gpu : survey.gpus) gpus.push_back(gpu.index);
    Result<DeviceChoice> chosen = ChooseDevice(requested, local_rank, local_world, gpus, survey.why_none);
    if (!chosen.ok() || !chosen->cuda) return chosen;  // the CPU: NCCL sets its GPU itself
    DeviceChoice choice = *chosen;
    sharing_ = choice.sharing;
    try {
      DS_CUDA(cudaSetDevice(choice.index));
    } catch (const DeviceError& e) {
      return Status::InvalidArgument(fmt::format("GPU {}: {}", choice.index, e.what()));
    }
    for (const GpuInfo& gpu : survey.gpus)
      if (gpu.index == choice.index) choice.description = fmt::format("cuda:{} {}", choice.index, Describe(gpu));
    return choice;
  }

  std::string NoGpuReason() override { return SurveyGpus().why_none; }

  std::unique_ptr<Communicator> ConnectNccl(gloo::rendezvous::Store& store, int rank, int size, int device,
                                            std::chrono::milliseconds timeout) override {
    NcclOptions options;
    options.device = device;
    options.timeout = timeout;
    return NcclCommunicator::Connect(store, rank, size, options);
  }

  EngineFactory Engines(Communicator& comm, bool allow_tf32, bool* hybrid) override {
    *hybrid = dynamic_cast<NcclCommunicator*>(&comm) == nullptr;
    comms_.push_back(MakeDeviceComm(comm));
    DeviceComm& device_comm = *comms_.back();
    const int sharing = sharing_;
    return [&device_comm, allow_tf32, sharing](const Mlp& model, const Optimizer& optimizer,
                                               const ZeroOptions& options) {
      return std::unique_ptr<Engine>(
          std::make_unique<DeviceZeroEngine>(model, device_comm, optimizer, options, allow_tf32, sharing));
    };
  }

 private:
  std::vector<std::unique_ptr<DeviceComm>> comms_;  // live as long as the process
  int sharing_ = 1;                                  // ranks on this rank's GPU (Choose)
};

}  // namespace
}  // namespace ds::rt::dev

extern "C" __attribute__((visibility("default"))) ds::rt::DevicePlugin* DsTrainDevicePlugin() {
  static ds::rt::dev::CudaPlugin plugin;
  return &plugin;
}
