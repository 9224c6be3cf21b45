// Agent <-> agent shard transfers (agent/snapshots/peer_link.h) over real loopback
// sockets: a replica put, a fetch (several chunks), a shard the server does
// not hold, a wrong key and another job refused, corrupt bytes refused, and
// an exception on the server's thread reported instead of killing the
// process. The hostile peers (a rogue client, a rogue listener, oversized
// announcements) are in peer_link_hostile_test.cc.
#include "agent/snapshots/peer_link.h"

#include <catch2/catch.hpp>
#include <signal.h>

#include <new>
#include <vector>

#include "checkpoint_format/checkpoint_format.h"
#include "tests/agent/snapshots/peer_link_fixture.h"

namespace ds {
namespace {

using testing::Copy;
using testing::FileOf;
using testing::kSet;
using testing::MapService;
using testing::Soon;

TEST_CASE("peer link: a replica sent is held by the peer, and fetched back byte for byte", "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  MapService server;
  server.Serve(b);
  std::string big(kShardChunk * 2 + 12345, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  testing::TempDir tmp;
  REQUIRE(SendShard(server.addr(), a, FileOf(tmp, Copy(300, 2, big)), Soon()).ok());
  CHECK(server.Data(300, 2) == big);
  MapService client;
  auto back = FetchShard(server.addr(), a, 300, kSet, 2, client.Opener(), Soon());
  REQUIRE(back.ok());
  CHECK(back->entry.id.world == 4);
  CHECK(back->entry.id.set == kSet);
  CHECK(back->entry.bytes == big.size());
  CHECK(client.Data(300, 2) == big);
  CHECK(client.Manifest(300, 2) == "{m}");
  // Another save of the same step is not that shard.
  CHECK_FALSE(FetchShard(server.addr(), a, 300, "0123456789abcdef", 2, client.Opener(), Soon()).ok());
  // Empty shards travel too.
  REQUIRE(SendShard(server.addr(), a, FileOf(tmp, Copy(301, 0, "")), Soon()).ok());
  auto empty = FetchShard(server.addr(), a, 301, kSet, 0, client.Opener(), Soon());
  REQUIRE(empty.ok());
  CHECK(client.Has(301, 0));
  CHECK(client.Data(301, 0).empty());
}

TEST_CASE("peer link: what the peer does not hold is an error naming the shard and the peer", "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  MapService server;
  server.Serve(b);
  MapService client;
  auto missing = FetchShard(server.addr(), a, 5, kSet, 1, client.Opener(), Soon());
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("fetching shard 1 of step 5 from " + server.addr()));
  CHECK_THAT(missing.status().message(), Catch::Contains("w1: not held"));
}

TEST_CASE("peer link: a wrong key or another job is refused before any shard moves", "[snapshots]") {
  PeerIdentity b{"job1", "key", 1, "w1"};
  MapService server;
  server.Serve(b);
  testing::TempDir tmp;
  Status wrong_key = SendShard(server.addr(), PeerIdentity{"job1", "other", 0, "x"}, FileOf(tmp, Copy(1, 0, "d")), Soon());
  CHECK(wrong_key.code() == Status::Code::kPermissionDenied);
  Status other_job = SendShard(server.addr(), PeerIdentity{"job2", "key", 0, "x"}, FileOf(tmp, Copy(1, 0, "d")), Soon());
  CHECK(other_job.code() == Status::Code::kPermissionDenied);
  CHECK_FALSE(server.Has(1, 0));
}

TEST_CASE("peer link: bytes that do not match the crc32 are refused by the receiver, and nothing is kept",
          "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  MapService server;
  server.Serve(b);
  ShardCopy c = Copy(7, 0, "good bytes");
  c.data = "evil bytes";
  testing::TempDir tmp;
  Status st = SendShard(server.addr(), a, FileOf(tmp, c), Soon());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("crc32 mismatch"));
  CHECK_FALSE(server.Has(7, 0));
}

// A service whose Receive throws what a failed allocation throws.
struct ThrowingService : MapService {
  Result<std::unique_ptr<ShardSink>> Receive(const HeldShard&, const std::string&) override { throw std::bad_alloc(); }
};

// Each connection is served on its own thread: peers that never finish
// their handshake (a host cut off mid-connect) hold only their own
// connections. Before, the server took one at a time and gave each silent
// one 5 s: three of them held this fetch for 15 s, past its 10 s deadline.
TEST_CASE("peer link: peers stalled in their handshake do not hold up another's fetch", "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  MapService server;
  server.Serve(b);
  testing::TempDir tmp;
  REQUIRE(SendShard(server.addr(), a, FileOf(tmp, Copy(3, 0, "held bytes")), Soon()).ok());
  std::vector<UniqueFd> silent;
  for (int i = 0; i < 3; ++i) {
    auto fd = ConnectTcp(server.addr(), "", Soon());
    REQUIRE(fd.ok());
    silent.push_back(std::move(fd).value());
  }
  MapService client;
  auto got = FetchShard(server.addr(), a, 3, kSet, 0, client.Opener(), Soon());
  REQUIRE(got.ok());
  CHECK(client.Data(3, 0) == "held bytes");
}

TEST_CASE("peer link: an exception on the server's thread is reported as the server's failure, the process lives",
          "[snapshots]") {
  PeerIdentity a{"job1", "key", 0, "w0"}, b{"job1", "key", 1, "w1"};
  ThrowingService server;
  server.Serve(b);
  testing::TempDir tmp;
  // The sender's sendfile may meet the closed connection: EPIPE, as in the
  // agent, which ignores SIGPIPE (agent.cc), not the signal.
  auto* old = ::signal(SIGPIPE, SIG_IGN);
  Status st = SendShard(server.addr(), a, FileOf(tmp, Copy(3, 0, "bytes")), Soon());
  ::signal(SIGPIPE, old);
  CHECK_FALSE(st.ok());  // the connection ended without an answer
  const std::string failed = server.WaitFailed(Soon());
  CHECK(failed == "the shard server on " + server.addr() + " stopped: std::bad_alloc");
}

}  // namespace
}  // namespace ds
