// Leader election with fencing against a real etcd: two campaigners, one
// wins; the leader's lease is revoked (a partition as etcd sees it) or its
// keepalives stop (a partition as the leader sees it), and the other wins
// with a higher token while the old one has stepped down, said why; a frame
// the old leader stamped is then refused by an agent's FencingGuard. The
// leader's own deadline is checked with a fake clock.
#include "launcher/failover/leader_election.h"

#include <catch2/catch.hpp>

#include "tests/launcher/failover/etcd_bed.h"
#include "wire/fencing_token.h"

namespace ds::failover {
namespace {

using testing::EtcdBed;

ElectionOptions Options(const std::string& who) { return ElectionOptions{"/dslaunch/job/leader", who, 2}; }

TEST_CASE("election: one of two leads; a revoked lease deposes it and the other leads with a higher token",
          "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto ca = bed->Client(), cb = bed->Client();
  LeaderElection a(*ca, RealClock(), Options("10.0.0.1:4000"));
  LeaderElection b(*cb, RealClock(), Options("10.0.0.2:4000"));
  auto won = a.Campaign();
  INFO(won.status().message());
  REQUIRE(won.ok());
  CHECK(won->leads);
  CHECK(a.Leads());
  CHECK(a.token() > 0);
  auto lost = b.Campaign();
  REQUIRE(lost.ok());
  CHECK_FALSE(lost->leads);
  CHECK(lost->holder == "10.0.0.1:4000");
  CHECK(lost->token == a.token());
  CHECK_FALSE(b.Leads());
  CHECK(a.Renew().ok());

  FencingGuard agent;
  CHECK(agent.Admit(static_cast<uint64_t>(a.token()), "10.0.0.1:4000").ok());

  // etcd drops a's lease (as it does when a's keepalives stop reaching it).
  auto admin = bed->Client();
  REQUIRE(admin->LeaseRevoke(a.lease_id()).ok());
  const Status vacant = b.WaitForVacancy(*lost, 10);
  INFO(vacant.message());
  REQUIRE(vacant.ok());
  auto next = b.Campaign();
  REQUIRE(next.ok());
  CHECK(next->leads);
  CHECK(b.token() > won->token);

  const int64_t old_token = a.token();
  const Status down = a.Renew();
  CHECK(down.code() == Status::Code::kAborted);
  CHECK(down.message().find("10.0.0.1:4000 steps down as leader of /dslaunch/job/leader (fencing token " +
                            std::to_string(old_token) + "): lease ") == 0);
  CHECK(down.message().find("expired or was revoked") != std::string::npos);
  CHECK(a.role() == Role::kSteppedDown);
  CHECK_FALSE(a.Leads());

  // The new leader's frame reaches the agent; the old leader's, replayed, is refused.
  CHECK(agent.Admit(static_cast<uint64_t>(b.token()), "10.0.0.2:4000").ok());
  const Status replayed = agent.Admit(static_cast<uint64_t>(old_token), "10.0.0.1:4000");
  CHECK(replayed.code() == Status::Code::kAborted);
  CHECK(b.Renew().ok());
  CHECK(b.Resign().ok());
  CHECK_FALSE(*admin->Get("/dslaunch/job/leader"));
}

TEST_CASE("election: a leader whose keepalives stop has stopped leading before the other wins", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto ca = bed->Client(), cb = bed->Client();
  LeaderElection a(*ca, RealClock(), Options("a"));
  LeaderElection b(*cb, RealClock(), Options("b"));
  REQUIRE(a.Campaign()->leads);
  auto seen = b.Campaign();
  REQUIRE(seen.ok());
  REQUIRE_FALSE(seen->leads);
  // a renews no more (partitioned, or its thread stalled): etcd expires its
  // lease after the TTL, and b, watching the key, campaigns again.
  const Status vacant = b.WaitForVacancy(*seen, 15);
  INFO(vacant.message());
  REQUIRE(vacant.ok());
  auto next = b.Campaign();
  REQUIRE(next.ok());
  CHECK(next->leads);
  CHECK(b.token() > a.token());
  CHECK_FALSE(a.Leads());  // by its own clock, before anyone told it
  const Status down = a.Renew();
  CHECK(down.code() == Status::Code::kAborted);
  CHECK(down.message().find("no keepalive answered within the lease's TTL (2 s)") != std::string::npos);
}

TEST_CASE("election: the leader key deleted under the leader: it steps down and says so", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto c = bed->Client();
  LeaderElection a(*c, RealClock(), Options("a"));
  REQUIRE(a.Campaign()->leads);
  auto admin = bed->Client();
  REQUIRE(admin->Delete("/dslaunch/job/leader").ok());
  const Status down = a.Renew();
  CHECK(down.message() == "a steps down as leader of /dslaunch/job/leader (fencing token " + std::to_string(a.token()) +
                              "): the leader key /dslaunch/job/leader is gone");
  CHECK_FALSE(a.Leads());
  // It may campaign again, and wins with a new, higher token.
  const int64_t old = a.token();
  REQUIRE(a.Campaign()->leads);
  CHECK(a.token() > old);
}

TEST_CASE("election: past the lease's deadline by the leader's clock, Renew steps down without asking etcd",
          "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto c = bed->Client();
  FakeClock clock;
  LeaderElection a(*c, clock, Options("a"));
  REQUIRE(a.Campaign()->leads);
  clock.Advance(std::chrono::milliseconds(1900));
  CHECK(a.Leads());
  clock.Advance(std::chrono::milliseconds(100));
  CHECK_FALSE(a.Leads());  // the deadline: no command frame goes out from here on
  bed->member(0).Kill();   // etcd unreachable now: Renew must not need it
  const Status down = a.Renew();
  CHECK(down.message() == "a steps down as leader of /dslaunch/job/leader (fencing token " + std::to_string(a.token()) +
                              "): no keepalive answered within the lease's TTL (2 s): another coordinator may lead now");
}

}  // namespace
}  // namespace ds::failover
