// dstrain: the built-in data-parallel / ZeRO trainer that dslaunch runs on
// every worker. Reads its trainer config from --config FILE or from
// DSLAUNCH_TRAINER_CONFIG (YAML text), its place in the job from the torchrun
// environment (RANK, WORLD_SIZE, MASTER_ADDR, GLOO_SOCKET_IFNAME) and the
// rendezvous store from DSLAUNCH_STORE_ADDR (dslaunch) or DSLAUNCH_STORE_PATH
// (standalone). Rank 0 prints progress and, at the end, "test accuracy: X".
//
// With DSLAUNCH_CONTROL_FD (set by dsagent) the process may be reshaped in
// place: a new rank and world, rolled back to a snapshot, without a restart
// (runtime/reshape/worker_reshape.h).
//
// Where it computes: trainer.device (runtime/engine/device_plugin.h ChooseDevice); on a
// GPU the engine is the device engine over NCCL on device buffers (backend:
// nccl) or over Gloo staged through host memory (backend: gloo, the hybrid
// mode).
//
// Exit codes (common/dstrain_exit.h): 0 done; 1 bad config, data or
// checkpoint I/O; 2 usage; 3 communication failure (a peer died or timed
// out: dslaunch restarts the generation from the last checkpoint; with a
// control channel only once no reshape came within the collective timeout); 4 a GPU
// failure (CUDA, cuBLAS, a kernel's fault seen while waiting for NCCL:
// dslaunch restarts without this host, and says so).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/cpu_binding.h"
#include "common/dstrain_exit.h"
#include "common/duration.h"
#include "common/env_registry.h"
#include "common/files.h"
#include "common/log.h"
#include "common/version.h"

#include "runtime/comm/gloo_store.h"
#include "runtime/reshape/control_channel.h"
#include "runtime/engine/device_plugin.h"
#include "runtime/reshape/generation_comms.h"
#include "runtime/train_data.h"
#include "runtime/trainer.h"
#include "runtime/reshape/worker_reshape.h"
#include "wire/step_heartbeat.h"

namespace {

using namespace ds;
using namespace ds::rt;

constexpr int kExitConfig = kDstrainExitConfig;
constexpr int kExitUsage = kDstrainExitUsage;

// DSLAUNCH_BIND_CORES: local rank r of n takes the r-th of n equal slices of
// the CPUs this process may use (so two jobs' cpusets are respected), NUMA
// node by node; fewer CPUs than ranks: a warning, no binding (DeepSpeed's rule).
void BindCores() {
  const int n = static_cast<int>(std::max<int64_t>(1, EnvInt("LOCAL_WORLD_SIZE")));
  const int r = static_cast<int>(EnvInt("LOCAL_RANK"));
  // The slicing of dsagent's --bind_cores_to_rank on a node without GPUs
  // (common/cpu_binding.h); dsagent's also follows the GPUs' NUMA nodes.
  auto mine = CoreSlice(NumaOrder(AllowedCpus(), NumaNodeCpus()), r, n);
  if (!mine.ok()) {
    DS_LOG(Warn, Train) << "DSLAUNCH_BIND_CORES: " << mine.status().message() << "; not binding";
    return;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : *mine) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    DS_LOG(Warn, Train) << "DSLAUNCH_BIND_CORES: sched_setaffinity failed";
}

// This rank's place in the job: RANK and WORLD_SIZE of the torchrun contract.
struct Place {
  int rank = 0;
  int world = 1;
};

Result<Place> ReadPlace() {
  Place p{static_cast<int>(EnvInt("RANK")), static_cast<int>(EnvInt("WORLD_SIZE"))};
  if (p.world < 1 || p.rank < 0 || p.rank >= p.world)
    return Status::InvalidArgument(fmt::format(
        "RANK={} WORLD_SIZE={}: expected 0 <= RANK < WORLD_SIZE", p.rank, p.world));
  return p;
}

// Log lines say host:pid [rank]; DSLAUNCH_BIND_CORES pins this rank's CPUs
// (before any thread starts). Returns the host's name as the logs give it.
std::string SetUpProcess(int rank) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string given = EnvString("DSLAUNCH_HOST");
  LogSetIdentity(given.empty() ? host : given, rank);
  if (EnvBool("DSLAUNCH_BIND_CORES")) BindCores();
  return given.empty() ? host : given;
}

struct LoadedConfig {
  std::string text;  // as read
  TrainerConfig config;
};

// From --config FILE, else DSLAUNCH_TRAINER_CONFIG. `has_source` is false
// when neither is given (a usage error); otherwise errors are config errors.
Result<LoadedConfig> ReadConfig(const std::string& config_file, int world, bool* has_source) {
  TrainerConfigOptions copts;
  copts.world_size = world;
  LoadedConfig out;
  *has_source = true;
  if (!config_file.empty()) {
    DS_ASSIGN_OR_RETURN(out.text, ReadTextFile(config_file, "trainer config"));
    DS_ASSIGN_OR_RETURN(out.config, LoadTrainerConfig(config_file, copts));
    return out;
  }
  auto env = EnvRaw("DSLAUNCH_TRAINER_CONFIG");
  if (!env || env->empty()) {
    *has_source = false;
    return Status::InvalidArgument(
        "no trainer config: pass --config FILE or set DSLAUNCH_TRAINER_CONFIG");
  }
  out.text = *env;
  copts.origin = "DSLAUNCH_TRAINER_CONFIG";
  DS_ASSIGN_OR_RETURN(out.config, ParseTrainerConfig(out.text, copts));
  return out;
}

TrainerRuntime MakeRuntime(const LoadedConfig& loaded, bool quiet, StepHeartbeat* heartbeat) {
  TrainerRuntime rt;
  rt.run_id = EnvString("DSLAUNCH_RUN_ID");
  rt.checkpoint_dir = loaded.config.checkpoint.dir.empty() ? EnvString("DSLAUNCH_CHECKPOINT_DIR")
                                                           : loaded.config.checkpoint.dir;
  rt.snapshot_dir = EnvString("DSLAUNCH_SNAPSHOT_DIR");
  rt.resume_step = EnvInt("DSLAUNCH_RESUME_STEP");
  rt.resume_set = EnvString("DSLAUNCH_RESUME_SET");
  rt.tty = isatty(fileno(stdout));
  rt.quiet = quiet;
  rt.heartbeat = heartbeat;
  return rt;
}

// backend: nccl needs a GPU and the GPU plugin.
Status CheckBackend(const TrainerConfig& config, DevicePlugin* plugin, const std::string& no_plugin) {
  if (config.backend != "nccl") return Status::OK();
  const std::string why = plugin != nullptr ? plugin->NoGpuReason() : no_plugin;
  if (why.empty()) return Status::OK();
  return Status::InvalidArgument(fmt::format("trainer.backend is nccl, but {}{}; use backend: gloo",
                                             plugin != nullptr ? "this node has " : "", why));
}

std::chrono::milliseconds CollectiveTimeout() {
  // Checked (range, error naming the variable) by OpenStore, which runs first.
  return std::chrono::milliseconds(ToMillis(EnvSeconds("DSLAUNCH_COLLECTIVE_TIMEOUT")));
}

// The job's rendezvous store, opened once: every generation this process
// takes part in uses it under its own keys (GenerationStore).
Result<RendezvousStore> OpenStore() {
  RendezvousOptions ro;
  ro.store_addr = EnvString("DSLAUNCH_STORE_ADDR");
  ro.store_token = EnvString("DSLAUNCH_STORE_TOKEN");
  ro.store_path = EnvString("DSLAUNCH_STORE_PATH");
  DS_RETURN_IF_ERROR(EnvDuration("DSLAUNCH_COLLECTIVE_TIMEOUT").status());
  ro.timeout = CollectiveTimeout();
  DS_ASSIGN_OR_RETURN(RendezvousStore store, OpenRendezvousStore(ro));
  DS_LOG(Info, Comm) << "rendezvous through " << store.description;
  return store;
}

// How this worker connects each generation's communicators.
CommsOptions CommsOptionsFromEnv(const TrainerConfig& config, DevicePlugin* plugin, int gpu) {
  CommsOptions o;
  o.job_id = EnvString("DSLAUNCH_JOB_ID");
  o.backend = config.backend;
  o.iface = EnvString("GLOO_SOCKET_IFNAME");
  o.master_addr = EnvString("MASTER_ADDR");
  o.timeout = CollectiveTimeout();
  o.snapshots = !EnvString("DSLAUNCH_SNAPSHOT_DIR").empty();
  o.plugin = plugin;
  o.gpu = gpu;
  return o;
}

// DSLAUNCH_CONTROL_FD (set by dsagent for dstrain workers): the channel for
// in-place reshapes; null when unset.
Result<std::unique_ptr<ControlChannel>> OpenControl() {
  const std::optional<std::string> text = EnvRaw("DSLAUNCH_CONTROL_FD");
  if (!text || text->empty()) return std::unique_ptr<ControlChannel>();
  const std::string origin = "DSLAUNCH_CONTROL_FD=" + *text;
  int fd = -1;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), fd);
  if (ec != std::errc() || end != text->data() + text->size() || fd < 0)
    return Status::InvalidArgument(origin + ": expected a file descriptor number");
  return ControlChannel::Open(fd, origin);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dstrain: data-parallel / ZeRO trainer (run by dslaunch, or standalone)"};
  app.set_version_flag("--version", "dstrain " DSLAUNCH_VERSION);
  std::string config_file;
  app.add_option("--config", config_file, "trainer config YAML (default: $DSLAUNCH_TRAINER_CONFIG)");
  bool quiet = false;
  app.add_flag("--quiet", quiet, "no progress output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  Result<Place> place = ReadPlace();
  if (!place.ok()) return Fail(kExitUsage, place.status().message());
  const std::string host = SetUpProcess(place->rank);
  bool has_source = false;
  Result<LoadedConfig> loaded = ReadConfig(config_file, place->world, &has_source);
  if (!loaded.ok()) return Fail(has_source ? kExitConfig : kExitUsage, loaded.status().message());
  auto heartbeat = StepHeartbeat::FromEnv();
  Worker w;
  w.config = loaded->config;
  w.resolve_config = [config_file](int world) -> Result<TrainerConfig> {
    bool has_source = true;
    DS_ASSIGN_OR_RETURN(LoadedConfig again, ReadConfig(config_file, world, &has_source));
    return std::move(again.config);
  };
  w.rt = MakeRuntime(*loaded, quiet, heartbeat.get());
  const TrainerConfig& config = w.config;
  w.host = host;

  // The GPU plugin, when this rank may use a GPU (runtime/engine/device_plugin.h).
  std::string no_plugin;
  if (config.device == "cuda" || config.backend == "nccl" || (config.device.empty() && VisibleGpus() > 0))
    w.plugin = LoadDevicePlugin(&no_plugin);
  if (w.plugin != nullptr) {
    Result<DeviceChoice> chosen = w.plugin->Choose(config.device, static_cast<int>(EnvInt("LOCAL_RANK")),
                                                    static_cast<int>(EnvInt("LOCAL_WORLD_SIZE")));
    if (!chosen.ok()) return Fail(kExitConfig, chosen.status().message());
    w.device = *chosen;
  } else if (config.device == "cuda") {
    return Fail(kExitConfig, "trainer.device is cuda, but " + no_plugin + "; use device: cpu");
  }
  w.rt.device = w.device.description;

  Result<std::unique_ptr<ControlChannel>> control = OpenControl();
  if (!control.ok()) return Fail(kExitUsage, control.status().message());
  w.control = std::move(control).value();
  // With a control channel a world of one may grow: the store must be there.
  const bool has_store = !EnvString("DSLAUNCH_STORE_ADDR").empty() || !EnvString("DSLAUNCH_STORE_PATH").empty();
  if (place->world > 1 || (w.control && has_store)) {
    if (Status st = CheckBackend(config, w.plugin, no_plugin); !st.ok()) return Fail(kExitConfig, st.message());
    Result<RendezvousStore> store = OpenStore();
    if (!store.ok()) return Fail(kExitUsage, store.status().message());
    w.store = std::move(store).value();
  }
  w.comms = CommsOptionsFromEnv(config, w.plugin, w.device.index);
  Result<TrainTestData> data = LoadTrainTestData(config.data);
  if (!data.ok()) return Fail(kExitConfig, data.status().message());
  w.data = std::make_shared<const TrainTestData>(std::move(data).value());

  const int code = RunGenerations(w, Membership{static_cast<uint32_t>(EnvInt("DSLAUNCH_GENERATION")),
                                                place->rank, place->world});
  if (w.abandoned > 0) {  // a generation's thread still waits out its timeout: no destructors under it
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}
