// SnapshotKeeper (agent/snapshot_keeper.h) with real threads, inotify and
// loopback sockets: a worker's handoff adopted, persisted and replicated to
// the next node; a third node gathering a step from its peers; a new agent
// finding the node's disk again; an abandoned timeline dropped.
#include "agent/snapshot_keeper.h"

#include <poll.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/snapshot_handoff.h"
#include "runtime/checkpoint_format.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

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

  explicit Node(uint32_t index, const std::string& disk_dir = "") {
    msg::SnapshotSetup setup{disk_dir.empty() ? tmp / "ckpt" : disk_dir, 2, "peer-key"};
    auto k = SnapshotKeeper::Start({"job", "w" + std::to_string(index), index, "127.0.0.1"}, setup, tmp.path());
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
  // What a worker does (runtime/checkpoint_snapshot.cc): the shard, then the manifest.
  void HandOff(int64_t step, uint32_t rank, uint32_t world, const std::string& data) {
    const std::string in = keeper->memory_dir() + "/incoming/";
    const Handoff h{step, rank, world, rt::Crc32(data)};
    WriteFile(in + HandoffName(h, kHandoffShard), data);
    WriteFile(in + HandoffName(h, kHandoffManifest) + ".tmp", "{manifest " + std::to_string(step) + "}");
    std::filesystem::rename(in + HandoffName(h, kHandoffManifest) + ".tmp", in + HandoffName(h, kHandoffManifest));
  }
};

TEST_CASE("snapshot keeper: a handoff is held, written to disk and replicated to the next node", "[snapshots]") {
  Node a(0), b(1);
  a.keeper->SetTargets(msg::Replicate{1, {{1, b.keeper->peer_addr()}}});
  a.HandOff(50, 0, 2, "rank-zero-state");
  REQUIRE(a.WaitFor([&] { return a.Reported(50, 0, 1) && a.Reported(50, 0, 2); }));
  CHECK(ReadFile(a.keeper->memory_dir() + "/step_00000050/shard_0.bin") == "rank-zero-state");
  CHECK(ReadFile(a.tmp / "ckpt/step_00000050/shard_0.bin") == "rank-zero-state");
  REQUIRE(b.WaitFor([&] { return b.Reported(50, 0, 1) && b.Reported(50, 0, 2); }));
  CHECK(ReadFile(b.keeper->memory_dir() + "/step_00000050/shard_0.bin") == "rank-zero-state");
  CHECK(ReadFile(b.tmp / "ckpt/step_00000050/shard_0.bin") == "rank-zero-state");
  CHECK(b.held.back().added.size() + b.held.front().added.size() >= 1);
  for (const auto& m : b.held)
    for (const auto& e : m.added) CHECK(e.origin == 0);  // b holds a replica of node 0's shard
  REQUIRE(a.WaitFor([&] { return !a.held.empty() && a.held.back().counters.sent_bytes == 15; }) );
  CHECK(a.held.back().counters.handoffs == 1);
}

TEST_CASE("snapshot keeper: a standby gathers a step from its peers' memory and disks", "[snapshots]") {
  Node a(0), b(1), c(2);
  a.HandOff(80, 0, 2, "zero");
  b.HandOff(80, 1, 2, "one");
  REQUIRE(a.WaitFor([&] { return a.Reported(80, 0, 2); }));
  REQUIRE(b.WaitFor([&] { return b.Reported(80, 1, 2); }));
  c.keeper->StartFetch(msg::Fetch{3, 80, {{0, 0, a.keeper->peer_addr()}, {1, 1, b.keeper->peer_addr()}}});
  REQUIRE(c.WaitFor([&] { return !c.fetched.empty(); }));
  CHECK(c.fetched[0].error == "");
  CHECK(c.fetched[0].generation == 3);
  CHECK(c.fetched[0].bytes == 7);
  CHECK(ReadFile(c.keeper->memory_dir() + "/step_00000080/shard_0.bin") == "zero");
  CHECK(ReadFile(c.keeper->memory_dir() + "/step_00000080/shard_1.bin") == "one");
  CHECK(ReadFile(c.keeper->memory_dir() + "/step_00000080/manifest.json") == "{manifest 80}");
  // A source that does not hold the shard: Fetched says so.
  c.keeper->StartFetch(msg::Fetch{4, 90, {{0, 0, a.keeper->peer_addr()}}});
  REQUIRE(c.WaitFor([&] { return c.fetched.size() == 2; }));
  CHECK_THAT(c.fetched[1].error, Catch::Contains("fetching shard 0 of step 90"));
}

TEST_CASE("snapshot keeper: a new agent finds the node's disk, and a fetch drops newer steps", "[snapshots]") {
  TempDir disk;
  {
    Node a(0, disk / "ckpt");
    a.HandOff(10, 0, 1, "ten");
    a.HandOff(20, 0, 1, "twenty");
    REQUIRE(a.WaitFor([&] { return a.Reported(10, 0, 2) && a.Reported(20, 0, 2); }));
  }
  Node again(0, disk / "ckpt");
  REQUIRE(again.WaitFor([&] { return again.Reported(10, 0, 2) && again.Reported(20, 0, 2); }));
  // Resume at step 10 (say step 20 was incomplete elsewhere): 20 goes, 10 comes to memory from disk.
  again.keeper->StartFetch(msg::Fetch{1, 10, {{0, 0, "127.0.0.1:1"}}});
  REQUIRE(again.WaitFor([&] { return !again.fetched.empty(); }));
  CHECK(again.fetched[0].error == "");
  CHECK(again.fetched[0].bytes == 0);  // from its own disk, nothing over the network
  CHECK(ReadFile(again.keeper->memory_dir() + "/step_00000010/shard_0.bin") == "ten");
  CHECK_FALSE(std::filesystem::exists(disk / "ckpt/step_00000020"));
  // Start fresh: everything goes.
  again.keeper->StartFetch(msg::Fetch{2, -1, {}});
  REQUIRE(again.WaitFor([&] { return again.fetched.size() == 2; }));
  CHECK_FALSE(std::filesystem::exists(disk / "ckpt/step_00000010"));
}

}  // namespace
}  // namespace ds
