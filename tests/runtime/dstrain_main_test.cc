// dstrain as a program: exit codes and messages for usage and config errors,
// a 2-rank standalone run through a file store (with its steady-state line), and a SIGKILLed rank making
// its peer exit with code 3 (communication failure) instead of hanging.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/cpu_binding.h"  // VisibleGpus
#include "tests/runtime/dstrain_process.h"
#include "tests/test_util/temp_dir.h"

using ds::testing::TempDir;
using ds::rt::testing::Proc;
using ds::rt::testing::Read;
using ds::rt::testing::Start;
using ds::rt::testing::Wait;

namespace {

// Receives dstrain's step heartbeats: one UDP datagram per finished step,
// rank and step as two big-endian int64 (wire/step_heartbeat.cc), sent to
// DSLAUNCH_HEARTBEAT_ADDR.
class BeatListener {
 public:
  BeatListener() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port_ = ntohs(a.sin_port);
  }
  ~BeatListener() { close(fd_); }
  std::string env() const { return "DSLAUNCH_HEARTBEAT_ADDR=127.0.0.1:" + std::to_string(port_); }

  // True once `rank` has reported a finished step; false after `limit`.
  bool WaitForStep(int rank, std::chrono::milliseconds limit) {
    using namespace std::chrono;
    const auto deadline = steady_clock::now() + limit;
    for (;;) {
      const auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      unsigned char b[16];
      if (recv(fd_, b, sizeof(b), 0) != static_cast<ssize_t>(sizeof(b))) continue;
      int64_t from = 0;
      for (int i = 0; i < 8; ++i) from = (from << 8) | b[i];
      if (from == rank) return true;
    }
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

const char* kSmall =
    "trainer:\n"
    "  model: {layers: [20, 16, 5]}\n"
    "  data: {dataset: synthetic, samples: 1200, features: 20, classes: 5}\n"
    "  epochs: 1\n"
    "  config: {train_batch_size: 32, optimizer: {type: Adam, params: {lr: 0.01}}}\n";

}  // namespace

TEST_CASE("dstrain without a config is a usage error", "[dstrain]") {
  TempDir d;
  auto p = Start({"DSLAUNCH_TRAINER_CONFIG="}, {}, d.path() + "/out");
  CHECK(Wait(p) == 2);
  CHECK(Read(p.out_path) ==
        "dstrain: error: no trainer config: pass --config FILE or set DSLAUNCH_TRAINER_CONFIG\n");
}

TEST_CASE("dstrain names a bad config key and exits 1", "[dstrain]") {
  TempDir d;
  auto p = Start({"DSLAUNCH_TRAINER_CONFIG=trainer: {epoks: 3}"}, {}, d.path() + "/out");
  CHECK(Wait(p) == 1);
  CHECK(Read(p.out_path).find("epoks") != std::string::npos);
}

TEST_CASE("dstrain with 2 ranks and no store says which variable to set", "[dstrain]") {
  TempDir d;
  auto p = Start({std::string("DSLAUNCH_TRAINER_CONFIG=") + kSmall, "RANK=0", "WORLD_SIZE=2",
                  "DSLAUNCH_STORE_ADDR=", "DSLAUNCH_STORE_PATH="},
                 {}, d.path() + "/out");
  CHECK(Wait(p) == 2);
  CHECK(Read(p.out_path).find("set DSLAUNCH_STORE_ADDR") != std::string::npos);
}

// Without CUDA in the build, or without a GPU on this machine, backend: nccl
// is refused up front with the reason, before any rendezvous.
TEST_CASE("dstrain refuses backend: nccl where it cannot run and says why", "[dstrain]") {
  if (ds::VisibleGpus() > 0) {
    WARN("an NVIDIA device is present: backend nccl may run here, nothing to refuse");
    return;
  }
#ifdef DSTRAIN_GPU_PLUGIN  // the plugin loads, then finds no GPU
  const std::string why = "but this node has no usable GPU: ";
#else
  const std::string why = "but this dstrain was built without CUDA (no libdstrain_cuda.so beside it";
#endif
  TempDir d;
  auto p = Start({std::string("DSLAUNCH_TRAINER_CONFIG=") + kSmall + "  backend: nccl\n", "RANK=0",
                  "WORLD_SIZE=2", "DSLAUNCH_STORE_PATH=" + d.path() + "/store"},
                 {}, d.path() + "/out");
  CHECK(Wait(p) == 1);
  const std::string out = Read(p.out_path);
  CHECK(out.rfind("dstrain: error: trainer.backend is nccl, " + why, 0) == 0);
  CHECK(out.find("; use backend: gloo\n") != std::string::npos);
}

// device: cuda where no GPU can be used is refused at start with the reason
// (the runtime's, or the build's), before any data is read or rank waited for.
TEST_CASE("dstrain refuses device: cuda without a usable GPU and says why", "[dstrain]") {
  if (ds::VisibleGpus() > 0) {
    WARN("an NVIDIA device is present: device cuda may run here, nothing to refuse");
    return;
  }
#ifdef DSTRAIN_GPU_PLUGIN  // the plugin loads (every symbol resolved), then finds no GPU
  const std::string why = "but this node has no usable GPU: ";
#else
  const std::string why = "but this dstrain was built without CUDA (no libdstrain_cuda.so beside it";
#endif
  TempDir d;
  auto p = Start({std::string("DSLAUNCH_TRAINER_CONFIG=") + kSmall + "  device: cuda\n", "RANK=0",
                  "WORLD_SIZE=1"},
                 {}, d.path() + "/out");
  CHECK(Wait(p) == 1);
  const std::string out = Read(p.out_path);
  CHECK(out.rfind("dstrain: error: trainer.device is cuda, " + why, 0) == 0);
  CHECK(out.find("; use device: cpu\n") != std::string::npos);
}

TEST_CASE("dstrain trains on 2 ranks through a file store", "[dstrain]") {
  TempDir d;
  std::vector<Proc> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(Start({std::string("DSLAUNCH_TRAINER_CONFIG=") + kSmall,
                           "RANK=" + std::to_string(r), "WORLD_SIZE=2",
                           "DSLAUNCH_STORE_PATH=" + d.path() + "/store", "DSLAUNCH_STORE_ADDR=",
                           "OPENBLAS_NUM_THREADS=1"},
                          {}, d.path() + "/out" + std::to_string(r)));
  CHECK(Wait(ranks[0]) == 0);
  CHECK(Wait(ranks[1]) == 0);
  const std::string out = Read(ranks[0].out_path);
  CHECK(out.find("test accuracy: ") != std::string::npos);
  // 1000 training samples (the rest is the test split) in batches of 32:
  // 31 steps, the last 21 after the warm-up
  // (what bench/gpu/gpu_bench reads as dstrain's steady state).
  CHECK(out.find(" ms/step over 21 steps after 10 warm-up steps\n") != std::string::npos);
  CHECK(out.find("train steady state: ") != std::string::npos);
  CHECK(Read(ranks[1].out_path).find("test accuracy") == std::string::npos);  // rank 0 only
}

TEST_CASE("with only max_steps the progress says steps of the total and the real epochs", "[dstrain]") {
  TempDir d;
  std::string cfg = kSmall;
  cfg.replace(cfg.find("epochs: 1"), 9, "max_steps: 40");  // 1000 samples / 32: 31 steps per epoch
  auto p = Start({std::string("DSLAUNCH_TRAINER_CONFIG=") + cfg, "RANK=0", "WORLD_SIZE=1",
                  "OPENBLAS_NUM_THREADS=1"},
                 {}, d.path() + "/out");
  CHECK(Wait(p) == 0);
  const std::string out = Read(p.out_path);
  INFO(out);
  CHECK(out.find("step 40/40 epoch 2/2 loss ") != std::string::npos);
  CHECK(out.find("/40 epoch") != std::string::npos);
  CHECK(out.find("epoch 1/40") == std::string::npos);
}

TEST_CASE("a SIGKILLed rank makes its peer exit 3 within the timeout", "[dstrain]") {
  using namespace std::chrono;
  TempDir d;
  std::string cfg = kSmall;
  cfg.replace(cfg.find("epochs: 1"), 9, "epochs: 1000");  // trains until killed
  BeatListener beats;
  std::vector<Proc> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(Start({"DSLAUNCH_TRAINER_CONFIG=" + cfg, "RANK=" + std::to_string(r), "WORLD_SIZE=2",
                           "DSLAUNCH_STORE_PATH=" + d.path() + "/store", "DSLAUNCH_STORE_ADDR=",
                           "DSLAUNCH_COLLECTIVE_TIMEOUT=3s", "OPENBLAS_NUM_THREADS=1",
                           beats.env()},
                          {"--quiet"}, d.path() + "/out" + std::to_string(r)));
  // Rank 1 finished a step: both are training (a step needs both).
  CHECK(beats.WaitForStep(1, seconds(60)));  // CHECK: the ranks are stopped either way
  const auto killed = steady_clock::now();
  kill(ranks[1].pid, SIGKILL);
  CHECK(Wait(ranks[1]) == 128 + SIGKILL);
  CHECK(Wait(ranks[0]) == 3);
  CHECK(steady_clock::now() - killed < seconds(2 * 3 + 5));  // generous: proves no hang
  CHECK(Read(ranks[0].out_path).find("dstrain: error: rank 0:") != std::string::npos);
}
