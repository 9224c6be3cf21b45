// dstrain reshaped in place (issue 27 items 1 and 5), with real processes and
// this test playing the agent: three ranks train with snapshots into one
// node's memory directory (agent/snapshots/store.h adopts their handoffs, as
// dsagent does), each with a control channel (a SOCK_SEQPACKET pair, the
// child's end as DSLAUNCH_CONTROL_FD). Rank 1 is SIGKILLed; the newest save
// all three completed is chosen as the coordinator would, and the survivors
// (old ranks 0 and 2) are told WorkerReshape{generation 1, ranks 0 and 1 of
// 2, that save}. They answer WorkerReshaped{ok} and train to the end. Their
// final shards must equal, byte for byte, those of two fresh ranks resumed
// from the same save (DSLAUNCH_RESUME_STEP/SET): what a full restart at that
// save with that world would compute. ZeRO stages 0 to 3. A reshape that
// names another store (the coordinator's, after a takeover) is formed there
// though the first store is gone. Also: a rank told
// it is not in the new world answers ok and exits 0; a bad
// DSLAUNCH_CONTROL_FD is a usage error naming it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "agent/snapshots/store.h"
#include "tests/runtime/dstrain_process.h"
#include "tests/test_util/temp_dir.h"
#include "tests/wire/store_fixture.h"
#include "wire/frame_io.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace {

using namespace std::chrono;
using testing::Proc;
using testing::Read;
using testing::Wait;
namespace fs = std::filesystem;

constexpr int64_t kSteps = 150;
constexpr char kRun[] = "abc123";

std::string Config(int stage, int64_t steps = kSteps) {
  return "trainer:\n"
         "  model: {layers: [32, 64, 64, 8]}\n"
         "  data: {dataset: synthetic, samples: 3000, features: 32, classes: 8}\n"
         "  max_steps: " + std::to_string(steps) + "\n"
         "  checkpoint: {every_steps: 10}\n"
         "  config: {train_batch_size: 48, optimizer: {type: Adam, params: {lr: 0.01}},\n"
         "           zero_optimization: {stage: " + std::to_string(stage) + "}}\n";
}

// A rank started with a control channel: `control` is the agent's end.
struct Rank {
  Proc proc;
  int control = -1;
};

Rank Spawn(std::vector<std::string> env, const std::string& out, bool with_control) {
  int pair[2] = {-1, -1};
  if (with_control) {
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
    REQUIRE(::fcntl(pair[1], F_SETFD, 0) == 0);  // the child's end crosses exec
    env.push_back("DSLAUNCH_CONTROL_FD=" + std::to_string(pair[1]));
  }
  Rank r{testing::Start(env, {"--quiet"}, out), pair[0]};
  if (with_control) ::close(pair[1]);
  return r;
}

std::vector<std::string> Env(const std::string& dir, const std::string& snapshots, int stage, int rank, int world,
                             int generation, int64_t steps = kSteps) {
  return {"DSLAUNCH_TRAINER_CONFIG=" + Config(stage, steps), "RANK=" + std::to_string(rank),
          "WORLD_SIZE=" + std::to_string(world), "DSLAUNCH_STORE_PATH=" + dir + "/store", "DSLAUNCH_STORE_ADDR=",
          "DSLAUNCH_JOB_ID=reshape", "DSLAUNCH_GENERATION=" + std::to_string(generation),
          "DSLAUNCH_RUN_ID=" + std::string(kRun), "DSLAUNCH_SNAPSHOT_DIR=" + snapshots,
          "DSLAUNCH_COLLECTIVE_TIMEOUT=30s", "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"};
}

// The handoffs (manifests) now in `incoming`.
std::vector<std::pair<std::string, Handoff>> Handoffs(const std::string& incoming) {
  std::vector<std::pair<std::string, Handoff>> out;
  for (const auto& e : fs::directory_iterator(incoming))
    if (auto h = ParseHandoffManifest(e.path().filename().string())) out.emplace_back(e.path().filename(), *h);
  return out;
}

// Waits (inotify, no polling) until `incoming` holds `n` handoffs of one step; false at the deadline.
bool WaitForSave(const std::string& incoming, size_t n, steady_clock::time_point deadline) {
  const int in = ::inotify_init1(IN_CLOEXEC);
  REQUIRE(in >= 0);
  REQUIRE(::inotify_add_watch(in, incoming.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) >= 0);
  bool done = false;
  while (!done) {
    std::map<int64_t, size_t> per_step;
    for (const auto& [name, h] : Handoffs(incoming)) done = done || ++per_step[h.step] == n;
    if (done) break;
    const auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    pollfd p{in, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    (void)!::read(in, buf, sizeof(buf));
  }
  ::close(in);
  return done;
}

struct Save {
  int64_t step = -1;
  std::string set;
};

// Adopts every handoff as dsagent does; the newest save of `world` shards all held.
Save AdoptNewestComplete(SnapshotStore& store, uint32_t world) {
  for (const auto& [name, h] : Handoffs(store.incoming_dir())) (void)store.Adopt(name, 0);
  std::map<std::pair<int64_t, std::string>, uint32_t> count;
  Save best;
  for (const HeldShard& held : store.Entries()) {
    const msg::ShardEntry& e = held.entry;
    if (e.id.world == world && ++count[{e.step, e.id.set}] == world && e.step > best.step) best = {e.step, e.id.set};
  }
  return best;
}

// The final shards (step kSteps, `world` ranks) handed over, by rank; removed from incoming/.
std::map<uint32_t, std::string> TakeFinalShards(const std::string& incoming, uint32_t world) {
  std::map<uint32_t, std::string> out;
  for (const auto& [name, h] : Handoffs(incoming)) {
    if (h.step != kSteps || h.id.world != world) continue;
    const std::string shard = incoming + "/" + HandoffName(h, kHandoffShard);
    out[h.rank] = Read(shard);
    fs::remove(shard);
    fs::remove(incoming + "/" + name);
  }
  return out;
}

void Send(const Rank& r, const msg::WorkerReshape& m) {
  const Bytes frame = EncodeFrame(wire::MsgType::kWorkerReshape, m.Encode());
  INFO("the worker's output: " << Read(r.proc.out_path));
  REQUIRE(::send(r.control, frame.data(), frame.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(frame.size()));
}

// The worker's answer, or an error naming what came instead (none within 60 s).
Result<msg::WorkerReshaped> Receive(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 60000) <= 0) return Status::Timeout("no WorkerReshaped within 60 s");
  uint8_t buf[4096];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  if (n < static_cast<ssize_t>(wire::kHeaderSize)) return Status::IOError("the worker closed its channel");
  DS_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(buf));
  if (h.type != wire::MsgType::kWorkerReshaped) return Status::InvalidArgument("not a WorkerReshaped");
  return msg::WorkerReshaped::Decode(Bytes(buf + wire::kHeaderSize, buf + n));
}

// "training again N ms after the request" in rank 0's output; -1 when absent.
int64_t TrainingAgainMs(const std::string& out) {
  std::smatch m;
  static const std::regex re("training again ([0-9]+) ms after the request");
  return std::regex_search(out, m, re) ? std::stoll(m[1]) : -1;
}

// How the survivors are told.
enum class Requests {
  kOne,                      // generation 1
  kTwoInARow,                // generations 1 and 2 at once: 2 counts
  kSecondWhileFirstConnects,  // 1 to old rank 0 alone, which connects it and waits for its peer; then 2 to both
  kReplaced                   // generation 1 keeps three ranks: a new process takes the killed rank's place
};

// Waits until something is written into the directory `fd` watches (inotify); false at the deadline.
bool WaitForWrite(int fd, steady_clock::time_point deadline) {
  pollfd p{fd, POLLIN, 0};
  const auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
  return left > 0 && ::poll(&p, 1, static_cast<int>(left)) == 1;
}

void Tell(const std::vector<Rank>& ranks, const Save& save, Requests how, const std::string& store_dir) {
  // Old ranks 0 and 2 become ranks 0 and 1 of 2.
  if (how == Requests::kSecondWhileFirstConnects) {
    const int in = ::inotify_init1(IN_CLOEXEC);
    REQUIRE(in >= 0);
    REQUIRE(::inotify_add_watch(in, store_dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) >= 0);
    Send(ranks[0], msg::WorkerReshape{1, 0, 2, save.step, save.set});
    CHECK(WaitForWrite(in, steady_clock::now() + seconds(30)));  // its address for generation 1: it connects
    ::close(in);
  }
  if (how == Requests::kReplaced) {  // ranks and world as they were
    Send(ranks[0], msg::WorkerReshape{1, 0, 3, save.step, save.set});
    Send(ranks[2], msg::WorkerReshape{1, 2, 3, save.step, save.set});
    return;
  }
  const uint32_t last = how == Requests::kOne ? 1 : 2;
  for (uint32_t g = how == Requests::kTwoInARow ? 1 : last; g <= last; ++g) {
    Send(ranks[0], msg::WorkerReshape{g, 0, 2, save.step, save.set});
    Send(ranks[2], msg::WorkerReshape{g, 1, 2, save.step, save.set});
  }
}

// Ranks 0..world-1 of generation `generation`, started from `save` as a restart starts them.
std::vector<Rank> Restarted(const std::string& dir, const std::string& snapshots, int stage, const Save& save,
                            const std::vector<int>& ranks, int world, int generation, const std::string& name) {
  std::vector<Rank> out;
  for (int r : ranks) {
    std::vector<std::string> env = Env(dir, snapshots, stage, r, world, generation);
    env.push_back("DSLAUNCH_RESUME_STEP=" + std::to_string(save.step));
    env.push_back("DSLAUNCH_RESUME_SET=" + save.set);
    out.push_back(Spawn(env, dir + "/" + name + std::to_string(r), true));
  }
  return out;
}

// Three ranks at ZeRO `stage`; rank 1 killed; the survivors reshaped (to
// two, or three with a replacement) as `how` tells them; their final shards
// compared with a restart's from that save.
void ReshapeAndCompare(int stage, Requests how) {
  const uint32_t requests = how == Requests::kOne || how == Requests::kReplaced ? 1 : 2;
  const int world = how == Requests::kReplaced ? 3 : 2;
  ds::testing::TempDir dir("dstrain-reshape");
  auto store = SnapshotStore::Create(dir.path());
  REQUIRE(store.ok());
  const std::string snapshots = (*store)->dir(), incoming = (*store)->incoming_dir();

  std::vector<Rank> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(Spawn(Env(dir.path(), snapshots, stage, r, 3, 0), dir / ("out" + std::to_string(r)), true));
  REQUIRE(WaitForSave(incoming, 3, steady_clock::now() + seconds(60)));
  ::kill(ranks[1].proc.pid, SIGKILL);
  CHECK(Wait(ranks[1].proc) == 128 + SIGKILL);
  const Save save = AdoptNewestComplete(**store, 3);
  REQUIRE(save.step > 0);
  REQUIRE(save.step < kSteps);

  Tell(ranks, save, how, dir / "store");
  std::vector<Rank> replacement;  // joins the survivors at the new world's first collective
  if (how == Requests::kReplaced) replacement = Restarted(dir.path(), snapshots, stage, save, {1}, 3, 1, "new");
  for (int r : {0, 2}) {
    Result<msg::WorkerReshaped> answer = Receive(ranks[r].control);  // the first answer: the last request's
    INFO("old rank " << r << ": " << Read(ranks[r].proc.out_path));
    REQUIRE(answer.ok());
    CHECK(answer->generation == requests);
    CHECK(answer->ok == 1);
    CHECK(answer->why == "");
    CHECK(answer->micros > 0);
  }
  CHECK(Wait(ranks[0].proc) == 0);
  CHECK(Wait(ranks[2].proc) == 0);
  for (const Rank& r : replacement) CHECK(Wait(r.proc) == 0);
  const std::string out0 = Read(ranks[0].proc.out_path);
  INFO(out0);
  const int64_t again_ms = TrainingAgainMs(out0);
  CHECK(again_ms >= 0);
  if (how == Requests::kSecondWhileFirstConnects)  // generation 1's thread, stuck in its rendezvous, left behind
    CHECK(out0.find("generation 1: a collective did not return within 250 ms of its abort; leaving it to its "
                    "timeout") != std::string::npos);
  const size_t line = out0.find("dstrain: reshaped in place");
  std::printf("ZeRO stage %d, %u request(s): %s\n", stage, static_cast<unsigned>(requests), out0.substr(line, out0.find('\n', line) - line).c_str());
  for (const Rank& r : ranks) ::close(r.control);
  for (const Rank& r : replacement) ::close(r.control);
  const std::map<uint32_t, std::string> reshaped = TakeFinalShards(incoming, world);
  REQUIRE(reshaped.size() == static_cast<size_t>(world));

  // The reference: `world` fresh ranks restarted from the same save.
  std::vector<int> all(world);
  std::iota(all.begin(), all.end(), 0);
  for (Rank& r : Restarted(dir.path(), snapshots, stage, save, all, world, 7, "fresh")) {
    CHECK(Wait(r.proc) == 0);
    ::close(r.control);
  }
  const std::map<uint32_t, std::string> restarted = TakeFinalShards(incoming, world);
  REQUIRE(restarted.size() == static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r);
    CHECK(reshaped.at(r) == restarted.at(r));  // bitwise: master weights and optimizer state
  }
}

}  // namespace

TEST_CASE("survivors reshaped in place end as a restart from the same save would, ZeRO 0-3", "[reshape]") {
  const int stage = GENERATE(0, 1, 2, 3);
  INFO("ZeRO stage " << stage);
  ReshapeAndCompare(stage, Requests::kOne);
}

TEST_CASE("a second WorkerReshape during a reshape: it starts over with the newer one", "[reshape]") {
  INFO("ZeRO stage 2");
  SECTION("both before the first is taken") { ReshapeAndCompare(2, Requests::kTwoInARow); }
  SECTION("while the first connects: that generation's thread is left behind") {
    ReshapeAndCompare(2, Requests::kSecondWhileFirstConnects);
  }
}

TEST_CASE("a crashed rank replaced by a new process: the survivors keep their ranks, bitwise a restart", "[reshape]") {
  const int stage = GENERATE(1, 3);
  INFO("ZeRO stage " << stage);
  ReshapeAndCompare(stage, Requests::kReplaced);
}

}  // namespace ds::rt

namespace ds::rt {

TEST_CASE("a rank left out of the new world answers ok and exits 0; the other trains on alone", "[reshape]") {
  ds::testing::TempDir dir("dstrain-reshape");
  auto store = SnapshotStore::Create(dir.path());
  REQUIRE(store.ok());
  std::vector<Rank> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(Spawn(Env(dir.path(), (*store)->dir(), 1, r, 2, 0), dir / ("out" + std::to_string(r)), true));
  REQUIRE(WaitForSave((*store)->incoming_dir(), 2, steady_clock::now() + seconds(60)));
  const Save save = AdoptNewestComplete(**store, 2);
  REQUIRE(save.step > 0);
  Send(ranks[1], msg::WorkerReshape{3, -1, 1, save.step, save.set});
  Send(ranks[0], msg::WorkerReshape{3, 0, 1, save.step, save.set});
  for (const Rank& r : ranks) {
    Result<msg::WorkerReshaped> answer = Receive(r.control);
    INFO(Read(r.proc.out_path));
    REQUIRE(answer.ok());
    CHECK(answer->generation == 3);
    CHECK(answer->ok == 1);
  }
  CHECK(Wait(ranks[1].proc) == 0);
  CHECK(Wait(ranks[0].proc) == 0);
  const std::string out0 = Read(ranks[0].proc.out_path);
  CHECK(out0.find("dstrain: reshaped in place to 1 ranks (generation 3) from step " + std::to_string(save.step)) !=
        std::string::npos);
  CHECK(Read(ranks[1].proc.out_path).find("error") == std::string::npos);
  for (const Rank& r : ranks) ::close(r.control);
}

TEST_CASE("a reshape that names another store (a coordinator took the job over): the survivors meet there, "
          "the lost coordinator's store gone", "[reshape]") {
  ds::testing::TempDir dir("dstrain-reshape");
  auto store = SnapshotStore::Create(dir.path());
  REQUIRE(store.ok());
  auto lost = std::make_unique<ds::testing::StoreFixture>("reshape");
  ds::testing::StoreFixture leader("reshape");
  std::vector<Rank> ranks;
  for (int r = 0; r < 3; ++r) {
    std::vector<std::string> env = Env(dir.path(), (*store)->dir(), 1, r, 3, 0);
    for (std::string& e : env)
      if (e.rfind("DSLAUNCH_STORE_ADDR=", 0) == 0) e += lost->addr;  // wins over DSLAUNCH_STORE_PATH
    env.push_back("DSLAUNCH_STORE_TOKEN=" + lost->token);
    ranks.push_back(Spawn(env, dir / ("out" + std::to_string(r)), true));
  }
  REQUIRE(WaitForSave((*store)->incoming_dir(), 3, steady_clock::now() + seconds(60)));
  ::kill(ranks[1].proc.pid, SIGKILL);
  CHECK(Wait(ranks[1].proc) == 128 + SIGKILL);
  lost.reset();  // its connections close, as a SIGKILLed dslaunch's do
  const Save save = AdoptNewestComplete(**store, 3);
  REQUIRE(save.step > 0);
  Send(ranks[0], msg::WorkerReshape{1, 0, 2, save.step, save.set, leader.addr, leader.token});
  Send(ranks[2], msg::WorkerReshape{1, 1, 2, save.step, save.set, leader.addr, leader.token});
  for (int r : {0, 2}) {
    Result<msg::WorkerReshaped> answer = Receive(ranks[r].control);
    INFO("old rank " << r << ": " << Read(ranks[r].proc.out_path));
    REQUIRE(answer.ok());
    CHECK(answer->generation == 1);
    CHECK(answer->why == "");
    CHECK(answer->ok == 1);
  }
  CHECK(Wait(ranks[0].proc) == 0);
  CHECK(Wait(ranks[2].proc) == 0);
  CHECK_THAT(Read(ranks[0].proc.out_path), Catch::Contains("dstrain: reshaped in place to 2 ranks (generation 1)"));
  for (const Rank& r : ranks) ::close(r.control);
}

TEST_CASE("a reshape to a save that is not there is answered ok 0 with why, and the worker exits 1", "[reshape]") {
  ds::testing::TempDir dir("dstrain-reshape");
  auto store = SnapshotStore::Create(dir.path());
  REQUIRE(store.ok());
  // Training until told (one rank alone runs kSteps in a few ms: it could end before the request).
  Rank rank = Spawn(Env(dir.path(), (*store)->dir(), 0, 0, 1, 0, int64_t{1} << 40), dir / "out0", true);
  REQUIRE(WaitForSave((*store)->incoming_dir(), 1, steady_clock::now() + seconds(60)));
  Send(rank, msg::WorkerReshape{2, 0, 1, 10, "0123456789abcdef"});
  Result<msg::WorkerReshaped> answer = Receive(rank.control);
  REQUIRE(answer.ok());
  CHECK(answer->generation == 2);
  CHECK(answer->ok == 0);
  CHECK_THAT(answer->why, Catch::Contains("step_00000010.0123456789abcdef"));
  CHECK(Wait(rank.proc) == 1);
  CHECK_THAT(Read(rank.proc.out_path), Catch::Contains("dstrain: error: "));
  ::close(rank.control);
}

TEST_CASE("DSLAUNCH_CONTROL_FD that is not a control channel is a usage error naming it", "[reshape]") {
  ds::testing::TempDir dir("dstrain-reshape");
  for (const auto& [value, error] : std::vector<std::pair<std::string, std::string>>{
           {"abc", "dstrain: error: DSLAUNCH_CONTROL_FD=abc: expected a file descriptor number\n"},
           {"999", "dstrain: error: DSLAUNCH_CONTROL_FD=999: not an open file descriptor\n"}}) {
    Proc p = testing::Start({"DSLAUNCH_TRAINER_CONFIG=" + Config(0), "DSLAUNCH_CONTROL_FD=" + value}, {},
                            dir / "out");
    CHECK(Wait(p) == 2);
    CHECK(Read(p.out_path) == error);
  }
}

}  // namespace ds::rt

namespace ds::rt {

TEST_CASE("a survivor told nothing exits 3 as before: at its agent's end, or after the collective timeout",
          "[reshape]") {
  const bool agent_gone = GENERATE(true, false);
  INFO((agent_gone ? "the agent closes its end" : "the agent stays silent"));
  ds::testing::TempDir dir("dstrain-reshape");
  auto store = SnapshotStore::Create(dir.path());
  REQUIRE(store.ok());
  std::vector<Rank> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env = Env(dir.path(), (*store)->dir(), 0, r, 2, 0);
    env.push_back("DSLAUNCH_COLLECTIVE_TIMEOUT=2s");
    ranks.push_back(Spawn(env, dir / ("out" + std::to_string(r)), true));
  }
  REQUIRE(WaitForSave((*store)->incoming_dir(), 2, steady_clock::now() + seconds(60)));
  ::kill(ranks[1].proc.pid, SIGKILL);
  CHECK(Wait(ranks[1].proc) == 128 + SIGKILL);
  if (agent_gone) ::close(ranks[0].control);
  CHECK(Wait(ranks[0].proc) == 3);
  // The training collective or the snapshot helper's ("snapshot of step S: rank 0: ...") saw the peer go.
  CHECK_THAT(Read(ranks[0].proc.out_path), Catch::StartsWith("dstrain: error: ") && Catch::Contains("rank 0: "));
  if (!agent_gone) {
    char byte;
    CHECK(::recv(ranks[0].control, &byte, 1, MSG_DONTWAIT) == 0);  // closed, nothing was answered
    ::close(ranks[0].control);
  }
  ::close(ranks[1].control);
}

}  // namespace ds::rt
