#include "runtime/engine/device_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

namespace ds::rt {

DeviceFailure::~DeviceFailure() = default;

Result<DeviceChoice> ChooseDevice(const std::string& requested, int local_rank, int local_world,
                                  const std::vector<int>& gpus, const std::string& why_none) {
  DeviceChoice choice;
  if (gpus.empty()) {
    if (requested == "cuda")
      return Status::InvalidArgument(
          fmt::format("trainer.device is cuda, but this node has {}; use device: cpu", why_none));
    return choice;  // cpu or unset: the CPU, quietly
  }
  const int n = static_cast<int>(gpus.size());
  const int slot = (local_rank % n + n) % n;
  choice.index = gpus[static_cast<size_t>(slot)];  // NCCL's GPU even on the CPU
  choice.sharing = 0;
  for (int r = 0; r < std::max(local_world, local_rank + 1); ++r) choice.sharing += r % n == slot;
  choice.cuda = requested != "cpu";
  return choice;
}

namespace {

std::string ExecutableDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
}

DevicePlugin* Load(std::string* why) {
  const std::string dir = ExecutableDir();
  // Installed (cmake --install, the .deb): <prefix>/lib/dslaunch/; a
  // `dslaunch cluster` image: /opt/dslaunch/lib/; the build tree: beside it.
  for (const std::string& path : {dir + "/../lib/dslaunch/" + kDevicePluginFile, dir + "/../lib/" + kDevicePluginFile,
                                   dir + "/" + kDevicePluginFile}) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) continue;
    // RTLD_NOW: a missing symbol or library is an error here, not a crash later.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      *why = std::string("its GPU path could not be loaded: ") + dlerror();
      return nullptr;
    }
    auto entry = reinterpret_cast<DevicePlugin* (*)()>(dlsym(handle, kDevicePluginEntry));
    if (entry == nullptr) {
      *why = path + " has no " + kDevicePluginEntry;
      return nullptr;
    }
    return entry();  // never unloaded: it lives as long as the process
  }
  *why = std::string("this dstrain was built without CUDA (no ") + kDevicePluginFile +
         " beside it; cmake -DDSLAUNCH_WITH_CUDA=ON)";
  return nullptr;
}

}  // namespace

DevicePlugin* LoadDevicePlugin(std::string* why) {
  static std::once_flag once;
  static DevicePlugin* plugin = nullptr;
  static std::string reason;
  std::call_once(once, [] { plugin = Load(&reason); });
  if (plugin == nullptr && why != nullptr) *why = reason;
  return plugin;
}

}  // namespace ds::rt
