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
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
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
#include "runtime/control_channel.h"
#include "runtime/device_plugin.h"
#include "runtime/generation_comms.h"
#include "runtime/train_data.h"
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

// The q-quantile of `v` (nearest rank); 0 for none.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Rank 0's results.
void PrintResults(const TrainResult& result, const TrainerRuntime& rt) {
  std::printf("train throughput: %.1f samples/s\n", result.samples_per_sec);
  if (result.steady_steps > 0)  // bench/gpu/gpu_bench reads this line
    std::printf("train steady state: %.6f ms/step over %lld steps after %lld warm-up steps\n",
                1e3 * result.steady_seconds / static_cast<double>(result.steady_steps),
                static_cast<long long>(result.steady_steps), static_cast<long long>(kSteadyWarmupSteps));
  std::printf("test accuracy: %.4f\n", result.test_accuracy);
  if (result.saves > 0)
    std::printf("%s: %lld, training stood still %.2f ms each (median %.2f, p90 %.2f; %.1f samples/s counting them)\n",
                rt.snapshot_dir.empty() ? "checkpoints" : "snapshots handed to the agent",
                static_cast<long long>(result.saves), 1e3 * result.save_seconds / static_cast<double>(result.saves),
                Quantile(result.save_ms, 0.5), Quantile(result.save_ms, 0.9), result.samples_per_sec_with_saves);
  std::fflush(stdout);
}

// What stays with the process across in-place reshapes (issue 27): the
// store connection, the data, the control channel.
struct Worker {
  TrainerConfig config;      // resolved for the current world size (batch geometry)
  std::string config_file;   // --config; "": DSLAUNCH_TRAINER_CONFIG
  TrainerRuntime rt;
  CommsOptions comms;
  RendezvousStore store;
  std::shared_ptr<const TrainTestData> data;
  std::unique_ptr<ControlChannel> control;  // null: no in-place reshapes
  DevicePlugin* plugin = nullptr;
  DeviceChoice device;
  std::string host;
};

// How one generation ended: an exit code, or interrupted (a collective
// failed, or a reshape was asked for) with why.
struct GenerationEnd {
  std::optional<int> exit_code;
  std::string why;
};

using Clock = std::chrono::steady_clock;

int64_t MillisSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// Tells the agent how the reshape `r` ended (once), when this run carries one out.
void AnswerReshape(Worker& w, std::optional<ReshapeRequest>& r, bool ok, const std::string& why) {
  if (!r || !w.control) return;
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - r->received).count();
  Status st = w.control->Answer(msg::WorkerReshaped{r->reshape.generation, static_cast<uint8_t>(ok ? 1 : 0), why,
                                                    static_cast<uint32_t>(std::min<int64_t>(micros, UINT32_MAX))});
  if (!st.ok()) DS_LOG(Warn, Comm) << st.message();
  if (ok && r->reshape.step >= 0) return;  // the first step still to be timed (on_first_step)
  r.reset();
}

// One generation: connect `m`'s ranks, build a trainer over the data held,
// resume (a reshape's save, or what the environment says) and train to the
// end. Throws DeviceFailure.
GenerationEnd RunGeneration(Worker& w, const Membership& m, std::optional<ReshapeRequest>& reshape) {
  try {
    auto comms = GenerationComms::Connect(w.store.store, m, w.comms, w.control.get());
    Communicator& comm = comms->training();
    TrainerRuntime rt = w.rt;
    rt.snapshot_comm = comms->snapshots();
    if (w.device.cuda) {
      bool hybrid = false;
      rt.make_engine = w.plugin->Engines(comm, w.config.tf32, &hybrid);
      if (hybrid && m.world > 1) rt.device += ", hybrid: gloo through host memory";
    }
    rt.on_resumed = [&] { AnswerReshape(w, reshape, true, ""); };
    rt.on_first_step = [&](int64_t step) {
      if (!reshape) return;
      if (m.rank == 0)
        std::printf("dstrain: reshaped in place to %d ranks (generation %u) from step %lld: training again %lld ms "
                    "after the request\n", m.world, m.generation, static_cast<long long>(reshape->reshape.step),
                    static_cast<long long>(MillisSince(reshape->received)));
      DS_LOG(Info, Train) << "step " << step << " trained " << MillisSince(reshape->received)
                          << " ms after the reshape request";
      reshape.reset();
    };
    auto trainer = Trainer::Create(w.config, comm, rt, w.data);
    Result<TrainResult> result = trainer.ok() ? (*trainer)->Run() : Result<TrainResult>(trainer.status());
    trainer = Status::Aborted("done");  // the trainer goes before its communicators
    if (!result.ok() && w.control && w.control->requested()) return {std::nullopt, result.status().message()};
    if (!result.ok()) {
      AnswerReshape(w, reshape, false, result.status().message());
      return {Fail(kExitConfig, result.status().message()), ""};
    }
    if (comm.rank() == 0) PrintResults(*result, rt);
    try {
      comm.Barrier();  // nobody tears down its connections while others still use them
    } catch (const CommError& e) {
      // Training and checkpoints are complete; a peer leaving early is not a failure.
      DS_LOG(Warn, Comm) << "final barrier: " << e.what();
    }
    return {0, ""};
  } catch (const CommError& e) {
    return {std::nullopt, e.what()};
  }
}

// After a generation was interrupted: the reshape to carry out next, when the
// agent asks for one within the collective timeout (a peer's death comes
// before its agent's word); nullopt otherwise.
std::optional<ReshapeRequest> NextReshape(Worker& w) {
  if (!w.control || !w.control->WaitForRequest(Clock::now() + w.comms.timeout)) return std::nullopt;
  return w.control->Take();
}

// Every generation this process takes part in, from `m`; the exit code.
int RunGenerations(Worker& w, Membership m) {
  std::optional<ReshapeRequest> reshape;  // being carried out
  for (;;) {
    GenerationEnd end = RunGeneration(w, m, reshape);
    if (end.exit_code) return *end.exit_code;
    std::optional<ReshapeRequest> next = NextReshape(w);
    if (!next) {
      AnswerReshape(w, reshape, false, end.why);
      return Fail(kExitComm, end.why);
    }
    reshape = std::move(next);  // a newer one replaces one still in progress
    const msg::WorkerReshape& r = reshape->reshape;
    if (r.rank < 0) {  // not part of the new world
      AnswerReshape(w, reshape, true, "");
      DS_LOG(Info, Train) << "left the job at generation " << r.generation;
      return 0;
    }
    if (r.world < 1 || r.rank >= static_cast<int32_t>(r.world)) {
      AnswerReshape(w, reshape, false, fmt::format("rank {} of {}: expected 0 <= rank < world", r.rank, r.world));
      return Fail(kExitComm, "reshape to an impossible rank");
    }
    // The batch geometry follows the world size, as a start at that size would resolve it.
    bool has_source = true;
    Result<LoadedConfig> resolved = ReadConfig(w.config_file, static_cast<int>(r.world), &has_source);
    if (!resolved.ok()) {
      AnswerReshape(w, reshape, false, resolved.status().message());
      return Fail(kExitConfig, resolved.status().message());
    }
    w.config = std::move(resolved->config);
    m = Membership{r.generation, r.rank, static_cast<int>(r.world)};
    w.rt.resume_step = r.step;
    w.rt.resume_set = r.set;
    LogSetIdentity(w.host, m.rank);
    DS_LOG(Info, Train) << "reshaping in place after: " << end.why;
  }
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
  Worker w{loaded->config, config_file, MakeRuntime(*loaded, quiet, heartbeat.get())};
  const TrainerConfig& config = w.config;
  w.host = host;

  // The GPU plugin, when this rank may use a GPU (runtime/device_plugin.h).
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
  if (w.control) w.rt.interrupt = w.control->requested_flag();
  // With a control channel a world of one may grow: the store must be there.
  if (place->world > 1 || (w.control && (EnvRaw("DSLAUNCH_STORE_ADDR") || EnvRaw("DSLAUNCH_STORE_PATH")))) {
    if (Status st = CheckBackend(config, w.plugin, no_plugin); !st.ok()) return Fail(kExitConfig, st.message());
    Result<RendezvousStore> store = OpenStore();
    if (!store.ok()) return Fail(kExitUsage, store.status().message());
    w.store = std::move(store).value();
  }
  w.comms = CommsOptionsFromEnv(config, w.plugin, w.device.index);
  Result<TrainTestData> data = LoadTrainTestData(config.data);
  if (!data.ok()) return Fail(kExitConfig, data.status().message());
  w.data = std::make_shared<const TrainTestData>(std::move(data).value());

  try {
    return RunGenerations(w, Membership{static_cast<uint32_t>(EnvInt("DSLAUNCH_GENERATION")), place->rank,
                                        place->world});
  } catch (const DeviceFailure& e) {
    return Fail(kExitDevice, std::string("GPU failure: ") + e.what());
  }
}
