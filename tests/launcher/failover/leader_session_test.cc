// The coordinator's failover thread against a real etcd: it leads from
// Start, writes the newest state the io thread offered (a burst costs no
// more than a write per text, and the newest lands), refuses to start where
// another coordinator leads the job, and, deposed behind its back, writes
// nothing more under its old token, leads again under a higher one and
// writes the newest state there. With etcd gone, Flush says so and Stop
// still ends.
#include "launcher/failover/leader_session.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "launcher/failover/state_store.h"
#include "tests/launcher/failover/etcd_bed.h"

namespace ds::failover {
namespace {

using testing::EtcdBed;

constexpr const char* kLeader = "/dslaunch/job/leader";
constexpr const char* kState = "/dslaunch/job/state";

LeaderSessionOptions Options(const EtcdBed& bed, const std::string& identity) {
  return LeaderSessionOptions{bed.ClientOptions(1), kLeader, kState, identity, 2};
}

std::string Stored(const EtcdBed& bed) {
  auto c = bed.Client();
  StateStore reader(*c, kState, kLeader);
  auto got = reader.Read();
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  return (*got)->text;
}

TEST_CASE("leader session: it leads from Start and the newest of a burst of states lands", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto s = LeaderSession::Start(Options(*bed, "10.0.0.1:4000"));
  INFO(s.status().message());
  REQUIRE(s.ok());
  CHECK((*s)->Leads());
  CHECK((*s)->token() > 0);
  for (int i = 0; i < 50; ++i) (*s)->Offer(fmt::format("{{\"generation\": {}}}", i));
  REQUIRE((*s)->Flush(10).ok());
  CHECK(Stored(*bed) == "{\"generation\": 49}");
  CHECK((*s)->writes() >= 1);
  CHECK((*s)->writes() <= 50);
  CHECK((*s)->revision() > 0);
  REQUIRE((*s)->Flush(1).ok());  // nothing new offered: nothing owed
  (*s)->Stop();
  CHECK_FALSE((*s)->Leads());
  auto c = bed->Client();
  auto key = c->Get(kLeader);
  REQUIRE(key.ok());
  CHECK_FALSE(key->has_value());  // resigned: a standby need not wait for the lease to expire
}

TEST_CASE("leader session: a second coordinator of the same job is refused, naming the one that leads", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto a = LeaderSession::Start(Options(*bed, "10.0.0.1:4000"));
  REQUIRE(a.ok());
  auto b = LeaderSession::Start(Options(*bed, "10.0.0.2:4000"));
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == Status::Code::kAborted);
  CHECK(b.status().message() == fmt::format("coordinator.etcd: {} is held by 10.0.0.1:4000 (fencing token {}): another "
                                            "coordinator leads this job",
                                            kLeader, (*a)->token()));
  CHECK((*a)->Leads());
}

TEST_CASE("leader session: deposed behind its back, it leads again under a higher token and writes the newest state "
          "there",
          "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto s = LeaderSession::Start(Options(*bed, "10.0.0.1:4000"));
  REQUIRE(s.ok());
  (*s)->Offer("{\"generation\": 1}");
  REQUIRE((*s)->Flush(10).ok());
  const int64_t first = (*s)->token();
  auto admin = bed->Client();
  REQUIRE(admin->Delete(kLeader).ok());  // as etcd does when the lease ends
  (*s)->Offer("{\"generation\": 2}");
  INFO((*s)->last_error());
  REQUIRE((*s)->Flush(15).ok());
  CHECK((*s)->elections() == 2);
  CHECK((*s)->token() > first);
  CHECK(Stored(*bed) == "{\"generation\": 2}");
  StateStore old_token(*admin, kState, kLeader);
  CHECK(old_token.Write("{\"generation\": 0}", first).status().code() == Status::Code::kAborted);
  auto key = admin->Get(kLeader);
  REQUIRE(key.ok());
  REQUIRE(key->has_value());
  CHECK((*key)->create_revision == (*s)->token());
  CHECK((*key)->value == "10.0.0.1:4000");
}

TEST_CASE("leader session: with etcd gone, Flush names what was not written, and Stop still ends", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto s = LeaderSession::Start(Options(*bed, "10.0.0.1:4000"));
  REQUIRE(s.ok());
  bed->member(0).Kill();
  (*s)->Offer("{\"generation\": 3}");
  const Status st = (*s)->Flush(1.5);
  CHECK(st.code() == Status::Code::kTimeout);
  CHECK(st.message().find(fmt::format("the job's state was not written to {} within 1.5 s", kState)) == 0);
  (*s)->Stop();
  CHECK_FALSE((*s)->Leads());
}

TEST_CASE("leader session: no etcd at the endpoints: Start names the key and the endpoint", "[etcd]") {
  const int port = testing::UnusedPort();
  LeaderSessionOptions o{etcd::ClientOptions{{fmt::format("127.0.0.1:{}", port)}, {}, 1}, kLeader, kState, "me", 2};
  auto s = LeaderSession::Start(o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == Status::Code::kUnavailable);
  CHECK(s.status().message().find(fmt::format("coordinator.etcd: cannot campaign for {}: ", kLeader)) == 0);
  CHECK(s.status().message().find(fmt::format("127.0.0.1:{}", port)) != std::string::npos);
}

}  // namespace
}  // namespace ds::failover
