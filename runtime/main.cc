// dstrain: the built-in data-parallel / ZeRO trainer that dslaunch runs on
// every worker. Reads its trainer config from --config FILE or from
// DSLAUNCH_TRAINER_CONFIG (YAML text), its place in the job from the torchrun
// environment (RANK, WORLD_SIZE, MASTER_ADDR, GLOO_SOCKET_IFNAME) and the
// rendezvous store from DSLAUNCH_STORE_ADDR (dslaunch) or DSLAUNCH_STORE_PATH
// (standalone). Rank 0 prints progress and, at the end, "test accuracy: X".
//
// Where it computes: trainer.device (runtime/device_plugin.h ChooseDevice); on a
// GPU the engine is the device engine over NCCL on device buffers (backend:
// nccl) or over Gloo staged through host memory (backend: gloo, the hybrid
// mode).
//
// Exit codes (common/dstrain_exit.h): 0 done; 1 bad config, data or
// checkpoint I/O; 2 usage; 3 communication failure (a peer died or timed
// out: dslaunch restarts the generation from the last checkpoint); 4 a GPU
// failure (CUDA, cuBLAS, a kernel's fault seen while waiting for NCCL:
// dslaunch does not restart, and says so).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
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
#include <gloo/rendezvous/prefix_store.h>

#include "runtime/comm/gloo_communicator.h"
#include "runtime/comm/gloo_store.h"
#include "runtime/device_plugin.h"
#include "runtime/trainer.h"
#include "wire/step_heartbeat.h"

namespace {

using namespace ds;
using namespace ds::rt;

constexpr int kExitConfig = kDstrainExitConfig;
constexpr int kExitUsage = kDstrainExitUsage;
constexpr int kExitComm = kDstrainExitComm;
constexpr int kExitDevice = kDstrainExitDevice;

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

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "dstrain: error: %s\n", message.c_str());
  return code;
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
// (before any thread starts).
void SetUpProcess(int rank) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string given = EnvString("DSLAUNCH_HOST");
  LogSetIdentity(given.empty() ? host : given, rank);
  if (EnvBool("DSLAUNCH_BIND_CORES")) BindCores();
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

// The job's rendezvous store, keys prefixed with the job and generation.
Result<RendezvousStore> OpenStore() {
  RendezvousOptions ro;
  ro.store_addr = EnvString("DSLAUNCH_STORE_ADDR");
  ro.store_token = EnvString("DSLAUNCH_STORE_TOKEN");
  ro.store_path = EnvString("DSLAUNCH_STORE_PATH");
  ro.prefix = fmt::format("dstrain/{}/{}/gloo", EnvString("DSLAUNCH_JOB_ID"),
                          EnvInt("DSLAUNCH_GENERATION"));
  DS_RETURN_IF_ERROR(EnvDuration("DSLAUNCH_COLLECTIVE_TIMEOUT").status());
  ro.timeout = CollectiveTimeout();
  DS_ASSIGN_OR_RETURN(RendezvousStore store, OpenRendezvousStore(ro));
  DS_LOG(Info, Comm) << "rendezvous through " << store.description;
  return store;
}

// Gloo, or NCCL through the GPU plugin, through `store`. Throws CommError.
std::unique_ptr<Communicator> Connect(const TrainerConfig& config, RendezvousStore& store, const Place& place,
                                      DevicePlugin* plugin, int gpu) {
  if (config.backend == "nccl")
    return plugin->ConnectNccl(*store.store, place.rank, place.world, gpu, CollectiveTimeout());
  GlooOptions go;
  go.iface = EnvString("GLOO_SOCKET_IFNAME");
  go.master_addr = EnvString("MASTER_ADDR");
  go.timeout = CollectiveTimeout();
  return GlooCommunicator::Connect(*store.store, place.rank, place.world, go);
}

// The snapshot helper's own communicator (runtime/checkpoint_snapshot_writer.h):
// Gloo over TCP whatever the training backend, through `store` under
// "snapshots", so its one small allreduce per save never waits for the
// training thread's collectives. Throws CommError.
std::unique_ptr<Communicator> ConnectSnapshots(RendezvousStore& store, const Place& place) {
  gloo::rendezvous::PrefixStore snapshots("snapshots", *store.store);
  GlooOptions go;
  go.iface = EnvString("GLOO_SOCKET_IFNAME");
  go.master_addr = EnvString("MASTER_ADDR");
  go.timeout = CollectiveTimeout();
  return GlooCommunicator::Connect(snapshots, place.rank, place.world, go);
}

// The q-quantile of `v` (nearest rank); 0 for none.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Trains and, on rank 0, prints the results. Throws CommError.
int TrainAndReport(const TrainerConfig& config, Communicator& comm, const TrainerRuntime& rt) {
  auto result = Train(config, comm, rt);
  if (!result.ok()) return Fail(kExitConfig, result.status().message());
  if (comm.rank() == 0) {
    std::printf("train throughput: %.1f samples/s\n", result->samples_per_sec);
    if (result->steady_steps > 0)  // bench/gpu/gpu_bench reads this line
      std::printf("train steady state: %.6f ms/step over %lld steps after %lld warm-up steps\n",
                  1e3 * result->steady_seconds / static_cast<double>(result->steady_steps),
                  static_cast<long long>(result->steady_steps), static_cast<long long>(kSteadyWarmupSteps));
    std::printf("test accuracy: %.4f\n", result->test_accuracy);
    if (result->saves > 0)
      std::printf("%s: %lld, training stood still %.2f ms each (median %.2f, p90 %.2f; %.1f samples/s counting them)\n",
                  rt.snapshot_dir.empty() ? "checkpoints" : "snapshots handed to the agent",
                  static_cast<long long>(result->saves), 1e3 * result->save_seconds / static_cast<double>(result->saves),
                  Quantile(result->save_ms, 0.5), Quantile(result->save_ms, 0.9), result->samples_per_sec_with_saves);
    std::fflush(stdout);
  }
  try {
    comm.Barrier();  // nobody tears down its connections while others still use them
  } catch (const CommError& e) {
    // Training and checkpoints are complete; a peer leaving early is not a failure.
    DS_LOG(Warn, Comm) << "final barrier: " << e.what();
  }
  return 0;
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
  SetUpProcess(place->rank);
  bool has_source = false;
  Result<LoadedConfig> loaded = ReadConfig(config_file, place->world, &has_source);
  if (!loaded.ok()) return Fail(has_source ? kExitConfig : kExitUsage, loaded.status().message());
  const TrainerConfig& config = loaded->config;
  auto heartbeat = StepHeartbeat::FromEnv();
  TrainerRuntime rt = MakeRuntime(*loaded, quiet, heartbeat.get());

  // The GPU plugin, when this rank may use a GPU (runtime/device_plugin.h).
  std::string no_plugin;
  DevicePlugin* plugin = nullptr;
  if (config.device == "cuda" || config.backend == "nccl" || (config.device.empty() && VisibleGpus() > 0))
    plugin = LoadDevicePlugin(&no_plugin);
  DeviceChoice device;
  if (plugin != nullptr) {
    Result<DeviceChoice> chosen = plugin->Choose(config.device, static_cast<int>(EnvInt("LOCAL_RANK")),
                                                  static_cast<int>(EnvInt("LOCAL_WORLD_SIZE")));
    if (!chosen.ok()) return Fail(kExitConfig, chosen.status().message());
    device = *chosen;
  } else if (config.device == "cuda") {
    return Fail(kExitConfig, "trainer.device is cuda, but " + no_plugin + "; use device: cpu");
  }
  rt.device = device.description;

  try {
    LocalCommunicator alone;
    Communicator* comm = &alone;
    Result<RendezvousStore> store = RendezvousStore{};  // outlives the communicator
    std::unique_ptr<Communicator> connected, snapshots;
    if (place->world > 1) {
      if (Status st = CheckBackend(config, plugin, no_plugin); !st.ok()) return Fail(kExitConfig, st.message());
      store = OpenStore();
      if (!store.ok()) return Fail(kExitUsage, store.status().message());
      connected = Connect(config, *store, *place, plugin, device.index);
      comm = connected.get();
      if (!rt.snapshot_dir.empty()) {
        snapshots = ConnectSnapshots(*store, *place);
        rt.snapshot_comm = snapshots.get();
      }
    }
    if (device.cuda) {
      bool hybrid = false;
      rt.make_engine = plugin->Engines(*comm, config.tf32, &hybrid);
      if (hybrid && place->world > 1) rt.device += ", hybrid: gloo through host memory";
    }
    return TrainAndReport(config, *comm, rt);
  } catch (const CommError& e) {
    return Fail(kExitComm, e.what());
  } catch (const DeviceFailure& e) {
    return Fail(kExitDevice, std::string("GPU failure: ") + e.what());
  }
}
