// dstrain: the built-in data-parallel / ZeRO trainer that dslaunch runs on
// every worker. Reads its trainer config from --config FILE or from
// DSLAUNCH_TRAINER_CONFIG (YAML text), its place in the job from the torchrun
// environment (RANK, WORLD_SIZE, MASTER_ADDR, GLOO_SOCKET_IFNAME) and the
// rendezvous store from DSLAUNCH_STORE_ADDR (dslaunch) or DSLAUNCH_STORE_PATH
// (standalone). Rank 0 prints progress and, at the end, "test accuracy: X".
//
// Exit codes: 0 done; 1 bad config, data or checkpoint I/O; 2 usage;
// 3 communication failure (a peer died or timed out: dslaunch restarts the
// generation from the last checkpoint).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/files.h"
#include "common/log.h"
#include "common/step_heartbeat.h"
#include "runtime/comm/gloo_communicator.h"
#ifdef DSLAUNCH_HAVE_NCCL
#include "runtime/comm/nccl_communicator.h"
#endif
#include "runtime/comm/gloo_store.h"
#include "runtime/trainer.h"

namespace {

constexpr int kExitConfig = 1;
constexpr int kExitUsage = 2;
constexpr int kExitComm = 3;

// DSLAUNCH_BIND_CORES: local rank r of n takes the r-th of n equal slices of
// the CPUs this process may use (so two jobs' cpusets are respected).
void BindCores() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  const int n = static_cast<int>(std::max<int64_t>(1, ds::EnvInt("LOCAL_WORLD_SIZE")));
  const int r = static_cast<int>(ds::EnvInt("LOCAL_RANK"));
  if (cpus.empty() || r < 0 || r >= n) return;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const size_t per = std::max<size_t>(1, cpus.size() / n);
  for (size_t i = 0; i < per; ++i) CPU_SET(cpus[(r * per + i) % cpus.size()], &mine);
  if (sched_setaffinity(0, sizeof(mine), &mine) != 0)
    DS_LOG(Warn, Train) << "DSLAUNCH_BIND_CORES: sched_setaffinity failed";
}

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "dstrain: error: %s\n", message.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ds;
  using namespace ds::rt;
  CLI::App app{"dstrain: data-parallel / ZeRO trainer (run by dslaunch, or standalone)"};
  std::string config_file;
  app.add_option("--config", config_file, "trainer config YAML (default: $DSLAUNCH_TRAINER_CONFIG)");
  bool quiet = false;
  app.add_flag("--quiet", quiet, "no progress output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  const int rank = static_cast<int>(EnvInt("RANK"));
  const int world = static_cast<int>(EnvInt("WORLD_SIZE"));
  if (world < 1 || rank < 0 || rank >= world)
    return Fail(kExitUsage, fmt::format("RANK={} WORLD_SIZE={}: expected 0 <= RANK < WORLD_SIZE",
                                        rank, world));
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string host_name = EnvString("DSLAUNCH_HOST").empty() ? host : EnvString("DSLAUNCH_HOST");
  LogSetIdentity(host_name, rank);
  if (EnvBool("DSLAUNCH_BIND_CORES")) BindCores();  // before any thread starts

  // Config.
  std::string text;
  TrainerConfigOptions copts;
  copts.world_size = world;
  Result<TrainerConfig> config = Status::InvalidArgument("no config");
  if (!config_file.empty()) {
    Result<std::string> file = ReadTextFile(config_file, "trainer config");
    if (!file.ok()) return Fail(kExitConfig, file.status().message());
    text = *file;
    config = LoadTrainerConfig(config_file, copts);
  } else if (auto env = EnvRaw("DSLAUNCH_TRAINER_CONFIG"); env && !env->empty()) {
    text = *env;
    copts.origin = "DSLAUNCH_TRAINER_CONFIG";
    config = ParseTrainerConfig(text, copts);
  } else {
    return Fail(kExitUsage, "no trainer config: pass --config FILE or set DSLAUNCH_TRAINER_CONFIG");
  }
  if (!config.ok()) return Fail(kExitConfig, config.status().message());

  TrainerRuntime rt;
  rt.config_text = text;
  rt.checkpoint_dir = config->checkpoint.dir.empty() ? EnvString("DSLAUNCH_CHECKPOINT_DIR")
                                                     : config->checkpoint.dir;
  rt.tty = isatty(fileno(stdout));
  rt.quiet = quiet;
  auto heartbeat = StepHeartbeat::FromEnv();
  rt.heartbeat = heartbeat.get();

  try {
    // Communicator: alone, or Gloo (or NCCL) through the job's store.
    std::unique_ptr<Communicator> comm;
    RendezvousStore store;
    if (world == 1) {
      comm = std::make_unique<LocalCommunicator>();
    } else {
#ifndef DSLAUNCH_HAVE_NCCL
      if (config->backend == "nccl")
        return Fail(kExitConfig, "trainer.backend is nccl, but this dstrain was built without CUDA "
                                 "(cmake -DDSLAUNCH_WITH_CUDA=ON); use backend: gloo");
#endif
      const auto timeout = std::chrono::milliseconds(
          static_cast<int64_t>(EnvSeconds("DSLAUNCH_COLLECTIVE_TIMEOUT") * 1000));
      RendezvousOptions ro;
      ro.store_addr = EnvString("DSLAUNCH_STORE_ADDR");
      ro.store_token = EnvString("DSLAUNCH_STORE_TOKEN");
      ro.store_path = EnvString("DSLAUNCH_STORE_PATH");
      ro.prefix = fmt::format("dstrain/{}/{}/gloo", EnvString("DSLAUNCH_JOB_ID"),
                              EnvInt("DSLAUNCH_GENERATION"));
      ro.timeout = timeout;
      auto opened = OpenRendezvousStore(ro);
      if (!opened.ok()) return Fail(kExitUsage, opened.status().message());
      store = std::move(opened).value();
      DS_LOG(Info, Comm) << "rendezvous through " << store.description;
#ifdef DSLAUNCH_HAVE_NCCL
      if (config->backend == "nccl") {
        NcclOptions no;
        no.device = EnvInt("LOCAL_RANK");
        no.timeout = timeout;
        comm = NcclCommunicator::Connect(*store.store, rank, world, no);
      }
#endif
      if (!comm) {
        GlooOptions go;
        go.iface = EnvString("GLOO_SOCKET_IFNAME");
        go.master_addr = EnvString("MASTER_ADDR");
        go.timeout = timeout;
        comm = GlooCommunicator::Connect(*store.store, rank, world, go);
      }
    }
    auto result = Train(*config, *comm, rt);
    if (!result.ok()) return Fail(kExitConfig, result.status().message());
    if (rank == 0) {
      std::printf("train throughput: %.1f samples/s\n", result->samples_per_sec);
      std::printf("test accuracy: %.4f\n", result->test_accuracy);
      std::fflush(stdout);
    }
    try {
      comm->Barrier();  // nobody tears down its connections while others still use them
    } catch (const CommError& e) {
      // Training and checkpoints are complete; a peer leaving early is not a failure.
      DS_LOG(Warn, Comm) << "final barrier: " << e.what();
    }
  } catch (const CommError& e) {
    return Fail(kExitComm, e.what());
  }
  return 0;
}
