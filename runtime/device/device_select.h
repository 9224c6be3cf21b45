// Where dstrain computes: trainer.device (cpu, cuda, or unset: cuda when a
// GPU is visible) and which GPU: LOCAL_RANK modulo the GPUs this process
// sees. dslaunch gives every worker of a node the node's GPUs in
// CUDA_VISIBLE_DEVICES (DeepSpeed's way), so local rank r takes the r-th;
// more ranks than GPUs share them round-robin, which only the hybrid mode
// (backend: gloo) allows: NCCL refuses two ranks on one GPU.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/engine.h"
#include "runtime/model/optimizer.h"

namespace ds::rt::dev {

class DeviceComm;

struct DeviceChoice {
  bool cuda = false;
  int index = 0;              // CUDA device ordinal (cuda only)
  std::string description;    // "cpu" or "cuda:0 NVIDIA H100 80GB HBM3 (sm_90, ...)"
};

// Decides and, for cuda, makes that GPU current (cudaSetDevice). Errors:
// cuda asked for where no GPU is usable (with the runtime's reason), or the
// GPU cannot be made current.
Result<DeviceChoice> ChooseDevice(const std::string& requested, int local_rank);

// An Engine factory for TrainerRuntime::make_engine: DeviceZeroEngines over
// `comm` (which must outlive them).
std::function<std::unique_ptr<Engine>(const Mlp&, const Optimizer&, const ZeroOptions&)> DeviceEngines(
    DeviceComm& comm, bool allow_tf32);

}  // namespace ds::rt::dev
