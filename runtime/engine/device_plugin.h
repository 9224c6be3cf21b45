// The GPU path as a plugin. Everything that needs CUDA's libraries (the
// device engine, the kernels, cuBLAS, NCCL: runtime/device/) is built into
// libdstrain_cuda.so in a CUDA build, and dstrain loads it only when it may
// use a GPU: trainer.device: cuda, backend: nccl, or no device given on a
// machine that shows an NVIDIA device node. So one dstrain runs on nodes and
// in containers without CUDA's libraries, on the CPU, and CPU runs do not
// pay for loading them. The plugin resolves the rest of dstrain (model,
// engines, communicators) against the executable, which exports its symbols.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/engine/device_failure.h"
#include "runtime/engine/engine.h"
#include "runtime/model/model.h"
#include "runtime/model/optimizer.h"

namespace gloo::rendezvous {
class Store;
}

namespace ds::rt {

// Where this rank computes, and which GPU is its own.
struct DeviceChoice {
  bool cuda = false;                 // compute on the GPU (the device engine)
  int index = -1;                    // this rank's GPU (CUDA device ordinal), whatever
                                     // `cuda` says: backend: nccl on the CPU trainer puts
                                     // NCCL there; -1 when no GPU is usable
  int sharing = 1;                   // local ranks on this rank's GPU, itself included
  std::string description = "cpu";   // "cuda:0 NVIDIA H100 80GB HBM3 (sm_90, ...)"
};

// The choice for trainer.device `requested` (cpu, cuda, or "": cuda when a
// GPU is usable) on local rank `local_rank` of `local_world`, among the
// usable GPUs `gpus` (CUDA device ordinals, in survey order): the rank's GPU
// is LOCAL_RANK modulo their count, so each local rank has its own while
// there are enough; `sharing` counts the local ranks that land on the same
// one. Error: cuda asked for and `gpus` empty (`why_none` says why).
// Pure; the plugin's Choose fills in the description and makes it current.
Result<DeviceChoice> ChooseDevice(const std::string& requested, int local_rank, int local_world,
                                  const std::vector<int>& gpus, const std::string& why_none);

using EngineFactory = std::function<std::unique_ptr<Engine>(const Mlp&, const Optimizer&, const ZeroOptions&)>;

class DevicePlugin {
 public:
  virtual ~DevicePlugin() = default;

  // trainer.device (cpu, cuda, or "": cuda when a GPU is usable) for local
  // rank `local_rank` of `local_world`: ChooseDevice over the surveyed GPUs,
  // made current when the rank computes there. Error: cuda asked for where
  // no GPU is usable, with the runtime's reason.
  virtual Result<DeviceChoice> Choose(const std::string& requested, int local_rank, int local_world) = 0;

  // "" when a GPU is usable, else why not ("no usable GPU: ...").
  virtual std::string NoGpuReason() = 0;

  // backend: nccl: the generation's NCCL communicator on GPU `device`
  // (runtime/device/nccl_communicator.h). Throws CommError.
  virtual std::unique_ptr<Communicator> ConnectNccl(gloo::rendezvous::Store& store, int rank, int size,
                                                    int device, std::chrono::milliseconds timeout) = 0;

  // Device engines over `comm`: NCCL on device buffers when `comm` came
  // from ConnectNccl, else the hybrid mode (`comm`'s collectives staged
  // through pinned host memory; *hybrid is set; at world 1 the collectives
  // are device copies, never staged). `comm` must outlive them.
  // They size their GPU memory for the `sharing` ranks of the last Choose.
  virtual EngineFactory Engines(Communicator& comm, bool allow_tf32, bool* hybrid) = 0;
};

// The plugin's entry point: extern "C" DevicePlugin* DsTrainDevicePlugin().
inline constexpr char kDevicePluginEntry[] = "DsTrainDevicePlugin";
inline constexpr char kDevicePluginFile[] = "libdstrain_cuda.so";

// Loads the plugin from beside this executable ($ORIGIN/../lib, then
// $ORIGIN), once per process. nullptr with *why when there is none ("this
// dstrain was built without CUDA (...)") or it cannot be loaded (dlerror:
// a CUDA library missing, say).
DevicePlugin* LoadDevicePlugin(std::string* why);

}  // namespace ds::rt
