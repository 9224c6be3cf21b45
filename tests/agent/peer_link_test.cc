// Agent <-> agent shard transfers (agent/peer_link.h) over real loopback
// sockets: a replica put, a fetch (several chunks), a shard the server does
// not hold, a wrong key and another job refused, corrupt bytes refused.
#include "agent/peer_link.h"


#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include "common/snapshot_handoff.h"
#include "runtime/checkpoint_format.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

const std::string kSet = ManifestDigest("{m}");

ShardCopy Copy(int64_t step, uint32_t shard, const std::string& data) {
  ShardCopy c;
  c.held.entry = msg::ShardEntry{step, shard, msg::SnapshotId{"ab", 4, 0, "c0", kSet}, 1, 1, data.size()};
  c.held.crc32 = rt::Crc32(data);
  c.manifest = "{m}";
  c.data = data;
  return c;
}

// `c` as an open shard file (what the agent sends from).
ShardFile FileOf(const testing::TempDir& dir, const ShardCopy& c) {
  const std::string path = dir / ("shard-" + std::to_string(c.held.entry.step) + "-" + std::to_string(c.held.entry.shard));
  testing::WriteFile(path, c.data);
  auto f = OpenShardFile(path, c.held, c.manifest);
  REQUIRE(f.ok());
  return std::move(f).value();
}

// A server whose shards live in a map.
struct MapServer {
  testing::TempDir dir;
  std::mutex mu;
  std::map<std::pair<int64_t, uint32_t>, ShardCopy> shards;
  std::unique_ptr<PeerServer> server;
  explicit MapServer(const PeerIdentity& me) {
    auto s = PeerServer::Start(
        "127.0.0.1", me,
        [this](int64_t step, const std::string& set, uint32_t shard) -> Result<ShardFile> {
          std::lock_guard<std::mutex> lock(mu);
          auto it = shards.find({step, shard});
          if (it == shards.end() || it->second.held.entry.id.set != set) return Status::NotFound("not held");
          return FileOf(dir, it->second);
        },
        [this](const ShardCopy& c) -> Status {
          std::lock_guard<std::mutex> lock(mu);
          shards[{c.held.entry.step, c.held.entry.shard}] = c;
          return Status::OK();
        },
        5.0);
    REQUIRE(s.ok());
    server = std::move(s).value();
  }
};

Deadline Soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(10); }

TEST_CASE("peer link: a replica sent is held by the peer, and fetched back byte for byte", "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  MapServer server(b);
  std::string big(kShardChunk * 2 + 12345, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  testing::TempDir tmp;
  REQUIRE(SendShard(server.server->addr(), a, FileOf(tmp, Copy(300, 2, big)), Soon()).ok());
  {
    std::lock_guard<std::mutex> lock(server.mu);
    REQUIRE(server.shards.count({300, 2}));
    CHECK(server.shards[{300, 2}].data == big);
  }
  auto back = FetchShard(server.server->addr(), a, 300, kSet, 2, Soon());
  REQUIRE(back.ok());
  CHECK(back->data == big);
  CHECK(back->manifest == "{m}");
  CHECK(back->held.entry.id.world == 4);
  CHECK(back->held.entry.id.set == kSet);
  // Another save of the same step is not that shard.
  CHECK_FALSE(FetchShard(server.server->addr(), a, 300, "0123456789abcdef", 2, Soon()).ok());
  // Empty shards travel too.
  REQUIRE(SendShard(server.server->addr(), a, FileOf(tmp, Copy(301, 0, "")), Soon()).ok());
  auto empty = FetchShard(server.server->addr(), a, 301, kSet, 0, Soon());
  REQUIRE(empty.ok());
  CHECK(empty->data.empty());
}

TEST_CASE("peer link: what the peer does not hold is an error naming the shard and the peer", "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  MapServer server(b);
  auto missing = FetchShard(server.server->addr(), a, 5, kSet, 1, Soon());
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("fetching shard 1 of step 5 from " + server.server->addr()));
  CHECK_THAT(missing.status().message(), Catch::Contains("w1: not held"));
}

TEST_CASE("peer link: a wrong key or another job is refused before any shard moves", "[snapshots]") {
  PeerIdentity b{"job1", "key", 1, "w1"};
  MapServer server(b);
  testing::TempDir tmp;
  Status wrong_key = SendShard(server.server->addr(), PeerIdentity{"job1", "other", 0, "x"}, FileOf(tmp, Copy(1, 0, "d")), Soon());
  CHECK(wrong_key.code() == Status::Code::kPermissionDenied);
  Status other_job = SendShard(server.server->addr(), PeerIdentity{"job2", "key", 0, "x"}, FileOf(tmp, Copy(1, 0, "d")), Soon());
  CHECK(other_job.code() == Status::Code::kPermissionDenied);
  std::lock_guard<std::mutex> lock(server.mu);
  CHECK(server.shards.empty());
}

TEST_CASE("peer link: bytes that do not match the crc32 are refused by the receiver", "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  MapServer server(b);
  ShardCopy c = Copy(7, 0, "good bytes");
  c.data = "evil bytes";
  testing::TempDir tmp;
  Status st = SendShard(server.server->addr(), a, FileOf(tmp, c), Soon());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("crc32 mismatch"));
  std::lock_guard<std::mutex> lock(server.mu);
  CHECK(server.shards.empty());
}

}  // namespace
}  // namespace ds
