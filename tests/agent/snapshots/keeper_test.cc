// SnapshotKeeper (agent/snapshots/keeper.h) with real threads, inotify and
// loopback sockets: a worker's handoff adopted, then persisted and
// replicated to the next node once the coordinator's plan names its save,
// and only that save (the others held in memory only, pruned as the plan
// lets go, never what it protects);
// a third node gathering a save from its peers; a new agent
// finding the node's disk again; an abandoned timeline dropped; an earlier
// run's saves kept through a fresh start and pruning, and never taken for
// another save of the same step.
#include "agent/snapshots/keeper.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "checkpoint_format/checkpoint_format.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "wire/snapshot_handoff.h"

namespace ds {
namespace {
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

struct Node {
  TempDir tmp{"dsagent-keeper-test"};
  std::unique_ptr<SnapshotKeeper> keeper;
  std::vector<msg::SnapshotHeld> held;
  std::vector<msg::Fetched> fetched;

  std::string run;

  explicit Node(uint32_t index, const std::string& disk_dir = "", std::string run_id = "ab",
                SnapshotBudget budget = {})
      : run(std::move(run_id)) {
    msg::SnapshotSetup setup{disk_dir.empty() ? tmp / "ckpt" : disk_dir, 2, "peer-key", run};
    auto k = SnapshotKeeper::Start({"job", "w" + std::to_string(index), index, "127.0.0.1"}, setup, tmp.path(), budget);
    REQUIRE(k.ok());
    keeper = std::move(k).value();
  }
  // Processes what the keeper says until `done` holds (10 s at most).
  template <typename Pred>
  bool WaitFor(Pred done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      pollfd fds[2] = {{keeper->inotify_fd(), POLLIN, 0}, {keeper->events_fd(), POLLIN, 0}};
      if (std::chrono::steady_clock::now() > end) return false;
      ::poll(fds, 2, 100);
      if (fds[0].revents) keeper->OnInotify();
      for (auto& [type, payload] : keeper->TakeOutgoing()) {
        if (type == wire::MsgType::kSnapshotHeld) held.push_back(msg::SnapshotHeld::Decode(payload).value());
        if (type == wire::MsgType::kFetched) fetched.push_back(msg::Fetched::Decode(payload).value());
      }
    }
    return true;
  }
  bool Reported(int64_t step, uint32_t shard, uint8_t tier) const {
    for (const auto& m : held)
      for (const auto& e : m.added)
        if (e.step == step && e.shard == shard && e.tier == tier) return true;
    return false;
  }
  bool Removed(int64_t step, const std::string& set) const {
    for (const auto& m : held)
      for (const auto& e : m.removed)
        if (e.step == step && e.id.set == set) return true;
    return false;
  }
  // What a worker does (runtime/checkpoint/snapshot.cc): the shard, then the
  // manifest. Returns the save's identity.
  msg::SnapshotId HandOff(int64_t step, uint32_t rank, uint32_t world, const std::string& data) {
    const std::string in = keeper->memory_dir() + "/incoming/";
    const Handoff h{step, rank, ckpt::Crc32(data), msg::SnapshotId{run, world, 1, "c0", ""}};
    const std::string manifest = Manifest(step, run, world);
    WriteFile(in + HandoffName(h, kHandoffShard), data);
    WriteFile(in + HandoffName(h, kHandoffManifest) + ".tmp", manifest);
    std::filesystem::rename(in + HandoffName(h, kHandoffManifest) + ".tmp", in + HandoffName(h, kHandoffManifest));
    return msg::SnapshotId{run, world, 1, "c0", ManifestDigest(manifest)};
  }
  static std::string Manifest(int64_t step, const std::string& run, uint32_t world) {
    return "{manifest " + std::to_string(step) + " " + run + " " + std::to_string(world) + "}";
  }
  // The coordinator's plan once `step` is handed over here: complete, to be
  // secured (persisted, replicated), protected.
  void Secure(int64_t step, const msg::SnapshotId& id, uint32_t shard = 0) {
    REQUIRE(WaitFor([&] { return Reported(step, shard, 1); }));
    const msg::SaveRef save{step, id.set};
    keeper->SetPlan(msg::SnapshotPlan{step, {save}, save});
  }
  // ... and until its shard is on the node's disk.
  void Persisted(int64_t step, const msg::SnapshotId& id, uint32_t shard = 0) {
    Secure(step, id, shard);
    REQUIRE(WaitFor([&] { return Reported(step, shard, 2); }));
  }
  std::string MemoryDir(int64_t step, const msg::SnapshotId& id) const {
    return keeper->memory_dir() + "/" + SnapshotStepDirName(step, id.set);
  }
};

TEST_CASE("snapshot keeper: a handoff is held, written to disk and replicated to the next node", "[snapshots]") {
  Node a(0), b(1);
  a.keeper->SetTargets(msg::Replicate{1, {{1, b.keeper->peer_addr()}}});
  const msg::SnapshotId id = a.HandOff(50, 0, 2, "rank-zero-state");
  a.Persisted(50, id);
  CHECK(ReadFile(a.MemoryDir(50, id) + "/shard_0.bin") == "rank-zero-state");
  CHECK(ReadFile(a.tmp / ("ckpt/" + SnapshotStepDirName(50, id.set) + "/shard_0.bin")) == "rank-zero-state");
  REQUIRE(b.WaitFor([&] { return b.Reported(50, 0, 1) && b.Reported(50, 0, 2); }));
  CHECK(ReadFile(b.MemoryDir(50, id) + "/shard_0.bin") == "rank-zero-state");
  CHECK(ReadFile(b.tmp / ("ckpt/" + SnapshotStepDirName(50, id.set) + "/shard_0.bin")) == "rank-zero-state");
  CHECK(b.held.back().added.size() + b.held.front().added.size() >= 1);
  for (const auto& m : b.held)
    for (const auto& e : m.added) {
      CHECK(e.origin == 0);  // b holds a replica of node 0's shard
      CHECK(e.id == id);
    }
  REQUIRE(a.WaitFor([&] { return !a.held.empty() && a.held.back().counters.sent_bytes == 15; }) );
  CHECK(a.held.back().counters.handoffs == 1);
}

TEST_CASE("snapshot keeper: only the save the plan names is persisted and replicated, and what it protects stays",
          "[snapshots]") {
  Node a(0), b(1);
  a.keeper->SetTargets(msg::Replicate{1, {{1, b.keeper->peer_addr()}}});
  const msg::SnapshotId ten = a.HandOff(10, 0, 1, "ten");
  const msg::SnapshotId twenty = a.HandOff(20, 0, 1, "twenty");
  const msg::SnapshotId thirty = a.HandOff(30, 0, 1, "thirty");
  REQUIRE(a.WaitFor([&] { return a.Reported(10, 0, 1) && a.Reported(20, 0, 1) && a.Reported(30, 0, 1); }));
  // Nothing is settled before the plan: all three held, none persisted.
  CHECK_FALSE(a.Removed(10, ten.set));
  // The coordinator secures 20 (10 is the recovery point, 30 is skipped whole).
  const msg::SaveRef point{10, ten.set}, secure{20, twenty.set};
  a.keeper->SetPlan(msg::SnapshotPlan{30, {point, secure}, secure});
  REQUIRE(a.WaitFor([&] { return a.Reported(20, 0, 2) && !a.held.empty() && a.held.back().counters.sent_bytes == 6; }));
  REQUIRE(b.WaitFor([&] { return b.Reported(20, 0, 1); }));
  CHECK(ReadFile(b.MemoryDir(20, twenty) + "/shard_0.bin") == "twenty");
  CHECK_FALSE(a.Reported(10, 0, 2));  // neither persisted ...
  CHECK_FALSE(a.Reported(30, 0, 2));
  CHECK_FALSE(b.Reported(10, 0, 1));  // ... nor sent
  CHECK_FALSE(b.Reported(30, 0, 1));
  // keep 2 would drop 10, but the plan protects it.
  CHECK(ReadFile(a.MemoryDir(10, ten) + "/shard_0.bin") == "ten");
  CHECK_FALSE(a.Removed(10, ten.set));
  // 20 is the point now: 10 may go.
  a.keeper->SetPlan(msg::SnapshotPlan{30, {secure}, {}});
  REQUIRE(a.WaitFor([&] { return a.Removed(10, ten.set); }));
  CHECK(ReadFile(a.MemoryDir(30, thirty) + "/shard_0.bin") == "thirty");
  CHECK(a.held.back().counters.handoffs == 3);
  CHECK(a.held.back().counters.cpu_micros > 0);
}

TEST_CASE("snapshot keeper: a standby gathers a step from its peers' memory and disks", "[snapshots]") {
  Node a(0), b(1), c(2);
  const msg::SnapshotId id = a.HandOff(80, 0, 2, "zero");
  b.HandOff(80, 1, 2, "one");
  a.Persisted(80, id);
  b.Persisted(80, id, 1);
  c.keeper->StartFetch(msg::Fetch{3, 80, id, {{0, 0, a.keeper->peer_addr()}, {1, 1, b.keeper->peer_addr()}}});
  REQUIRE(c.WaitFor([&] { return !c.fetched.empty(); }));
  CHECK(c.fetched[0].error == "");
  CHECK(c.fetched[0].generation == 3);
  CHECK(c.fetched[0].set == id.set);
  CHECK(c.fetched[0].bytes == 7);
  CHECK(ReadFile(c.MemoryDir(80, id) + "/shard_0.bin") == "zero");
  CHECK(ReadFile(c.MemoryDir(80, id) + "/shard_1.bin") == "one");
  CHECK(ReadFile(c.MemoryDir(80, id) + "/manifest.json") == Node::Manifest(80, "ab", 2));
  // A source that does not hold the shard: Fetched says so.
  msg::SnapshotId later = id;
  later.set = ManifestDigest(Node::Manifest(90, "ab", 2));
  c.keeper->StartFetch(msg::Fetch{4, 90, later, {{0, 0, a.keeper->peer_addr()}}});
  REQUIRE(c.WaitFor([&] { return c.fetched.size() == 2; }));
  CHECK_THAT(c.fetched[1].error, Catch::Contains("fetching shard 0 of step 90"));
}

// A TCP listener that never accepts: the kernel completes a connect, and
// the sender then waits for a handshake that never comes (a node that went
// silent mid-replication).
UniqueFd SilentListener(std::string* addr) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) == 0);
  REQUIRE(::listen(fd.get(), 16) == 0);
  REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) == 0);
  *addr = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  return fd;
}

TEST_CASE("snapshot keeper: a gather never waits for a replica stuck on a silent node", "[snapshots]") {
  Node a(0), b(1);
  std::string silent;
  UniqueFd listener = SilentListener(&silent);
  a.keeper->SetTargets(msg::Replicate{1, {{2, silent}}});
  a.Persisted(50, a.HandOff(50, 0, 2, "zero"));  // persisted: its replica is under way, stuck
  const msg::SnapshotId id = b.HandOff(80, 1, 2, "one");
  b.Persisted(80, id, 1);
  a.keeper->StartFetch(msg::Fetch{3, 80, id, {{1, 1, b.keeper->peer_addr()}}});
  REQUIRE(a.WaitFor([&] { return !a.fetched.empty(); }));  // within WaitFor's 10 s, not the send's 60 s
  CHECK(a.fetched[0].error == "");
  CHECK(ReadFile(a.MemoryDir(80, id) + "/shard_1.bin") == "one");
}

TEST_CASE("snapshot keeper: a new agent finds the node's disk, and a fetch drops newer steps", "[snapshots]") {
  TempDir disk;
  msg::SnapshotId ten, twenty;
  {
    Node a(0, disk / "ckpt");
    ten = a.HandOff(10, 0, 1, "ten");
    a.Persisted(10, ten);
    twenty = a.HandOff(20, 0, 1, "twenty");
    a.Persisted(20, twenty);
  }
  Node again(0, disk / "ckpt");
  REQUIRE(again.WaitFor([&] { return again.Reported(10, 0, 2) && again.Reported(20, 0, 2); }));
  // Resume at step 10 (say step 20 was incomplete elsewhere): 20 goes, 10 comes to memory from disk.
  again.keeper->StartFetch(msg::Fetch{1, 10, ten, {{0, 0, "127.0.0.1:1"}}});
  REQUIRE(again.WaitFor([&] { return !again.fetched.empty(); }));
  CHECK(again.fetched[0].error == "");
  CHECK(again.fetched[0].bytes == 0);  // from its own disk, nothing over the network
  CHECK(ReadFile(again.MemoryDir(10, ten) + "/shard_0.bin") == "ten");
  CHECK_FALSE(std::filesystem::exists(disk / ("ckpt/" + SnapshotStepDirName(20, twenty.set))));
  // Start fresh: everything of this run goes.
  again.keeper->StartFetch(msg::Fetch{2, -1, {}, {}});
  REQUIRE(again.WaitFor([&] { return again.fetched.size() == 2; }));
  CHECK_FALSE(std::filesystem::exists(disk / ("ckpt/" + SnapshotStepDirName(10, ten.set))));
}

TEST_CASE("snapshot keeper: a fetch of an older step never drops the recovery point", "[snapshots]") {
  TempDir disk;
  Node a(0, disk / "ckpt");
  const msg::SnapshotId ten = a.HandOff(10, 0, 1, "ten");
  a.Persisted(10, ten);
  const msg::SnapshotId twenty = a.HandOff(20, 0, 1, "twenty");
  a.Persisted(20, twenty);  // the plan now protects 20: say it is the recovery point
  // A gather of 20 failed elsewhere and gave way to 10: 20 stays, in memory and on disk.
  a.keeper->StartFetch(msg::Fetch{1, 10, ten, {{0, 0, "127.0.0.1:1"}}});
  REQUIRE(a.WaitFor([&] { return !a.fetched.empty(); }));
  CHECK(a.fetched[0].error == "");
  CHECK_FALSE(a.Removed(20, twenty.set));
  CHECK(ReadFile(a.MemoryDir(20, twenty) + "/shard_0.bin") == "twenty");
  CHECK(std::filesystem::exists(disk / ("ckpt/" + SnapshotStepDirName(20, twenty.set))));
  // The generation went on from 10: the plan names 20's timeline as abandoned.
  a.keeper->SetPlan(msg::SnapshotPlan{10, {{10, ten.set}}, {}, {{20, twenty.set}}});
  REQUIRE(a.WaitFor([&] { return a.Removed(20, twenty.set); }));
  CHECK_FALSE(std::filesystem::exists(disk / ("ckpt/" + SnapshotStepDirName(20, twenty.set))));
}

TEST_CASE("snapshot keeper: over its CPU budget it waits instead of skipping, and never holds up a gather",
          "[snapshots]") {
  Node a(0, "", "ab", SnapshotBudget{1e-9, 0});  // after the first save, any CPU is over budget
  const msg::SnapshotId ten = a.HandOff(10, 0, 1, "ten");
  a.Persisted(10, ten);  // nothing spent yet: at once
  const msg::SnapshotId twenty = a.HandOff(20, 0, 1, "twenty");
  a.Secure(20, twenty);  // waits for a budget that will not come in this test's life
  a.keeper->StartFetch(msg::Fetch{1, 10, ten, {{0, 0, "127.0.0.1:1"}}});
  REQUIRE(a.WaitFor([&] { return !a.fetched.empty(); }));  // the gather is not held behind the wait
  CHECK(a.fetched[0].error == "");
  CHECK_FALSE(a.Reported(20, 0, 2));  // not written while over budget ...
  CHECK(ReadFile(a.MemoryDir(20, twenty) + "/shard_0.bin") == "twenty");  // ... and kept, protected
}

TEST_CASE("snapshot keeper: a later run keeps an earlier run's saves through a fresh start and pruning",
          "[snapshots]") {
  TempDir disk;
  msg::SnapshotId first;
  {
    Node a(0, disk / "ckpt", "aa01");  // an earlier 2-node run: this node's shard 0 of step 10
    first = a.HandOff(10, 0, 2, "two-node shard 0");
    a.Persisted(10, first);
  }
  Node b(0, disk / "ckpt", "bb02");  // a 1-node run on the same directory
  REQUIRE(b.WaitFor([&] { return b.Reported(10, 0, 2); }));
  b.keeper->StartFetch(msg::Fetch{0, -1, {}, {}});  // nothing whole: it starts fresh
  REQUIRE(b.WaitFor([&] { return !b.fetched.empty(); }));
  const std::string kept = disk / ("ckpt/" + SnapshotStepDirName(10, first.set) + "/shard_0.bin");
  CHECK(ReadFile(kept) == "two-node shard 0");
  CHECK_FALSE(b.Removed(10, first.set));
  // Its own saves of steps 10, 20 and 30 (keep 2): its step 10 is pruned, the earlier run's is not.
  const msg::SnapshotId own10 = b.HandOff(10, 0, 1, "one-node 10");
  b.HandOff(20, 0, 1, "one-node 20");
  b.Persisted(30, b.HandOff(30, 0, 1, "one-node 30"));
  REQUIRE(b.WaitFor([&] { return b.Removed(10, own10.set); }));
  CHECK(ReadFile(kept) == "two-node shard 0");
  CHECK_FALSE(b.Removed(10, first.set));
}

TEST_CASE("snapshot keeper: a fetch takes the save asked for, not another save of the step on its disk",
          "[snapshots]") {
  // Node 1's disk holds shard 0 of step 20 of a 2-rank save (a replica from
  // before a restart); the save chosen is the 1-rank one node 0 holds.
  TempDir disk;
  Node a(0);
  {
    Node b(1, disk / "ckpt");
    b.Persisted(20, b.HandOff(20, 0, 2, "2-rank shard 0"));
  }
  Node b(1, disk / "ckpt");
  REQUIRE(b.WaitFor([&] { return b.Reported(20, 0, 2); }));
  const msg::SnapshotId one = a.HandOff(20, 0, 1, "1-rank shard 0");
  REQUIRE(a.WaitFor([&] { return a.Reported(20, 0, 1); }));
  b.keeper->StartFetch(msg::Fetch{2, 20, one, {{0, 0, a.keeper->peer_addr()}}});
  REQUIRE(b.WaitFor([&] { return !b.fetched.empty(); }));
  CHECK(b.fetched[0].error == "");
  CHECK(b.fetched[0].bytes == 14);  // over the network: its disk has another save of step 20
  CHECK(ReadFile(b.MemoryDir(20, one) + "/shard_0.bin") == "1-rank shard 0");
}

}  // namespace
}  // namespace ds
