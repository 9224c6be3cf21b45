// The job's state in etcd under the leader's fencing token, against a real
// etcd: the leader writes JobState's text whole and a reader (a standby
// taking over) gets the newest back as the same value; a leader deposed by
// etcd (its lease revoked, as when its keepalives stop arriving) can no
// longer write, before and after another has taken the lead, and the state
// it would have overwritten stays.
#include "launcher/failover/state_store.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "launcher/coordinator/job_state.h"
#include "launcher/failover/leader_election.h"
#include "tests/launcher/failover/etcd_bed.h"

namespace ds::failover {
namespace {

using testing::EtcdBed;

constexpr const char* kLeader = "/dslaunch/job/leader";
constexpr const char* kState = "/dslaunch/job/state";

JobState Generation(int g) {
  JobState s;
  s.job_id = "job";
  s.phase = CoordState::kRunning;
  s.generation = g;
  s.generation_nodes = {0, 2};
  s.world_size = 4;
  s.master_port = 29500;
  s.candidates = {{"w0", true, false}, {"w1", true, true}, {"w2", true, false}};
  s.recovery_point.step = 40 * g;
  return s;
}

TEST_CASE("state store: the leader writes the job's state whole; a standby reads the newest", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto ca = bed->Client(), cb = bed->Client();
  LeaderElection a(*ca, RealClock(), ElectionOptions{kLeader, "10.0.0.1:4000", 2});
  REQUIRE(a.Campaign().ok());
  REQUIRE(a.Leads());
  StateStore leader(*ca, kState, kLeader), standby(*cb, kState, kLeader);
  auto none = standby.Read();
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());  // a fresh job: nothing to take over

  const Clock::time_point now = RealClock().Now();
  auto first = leader.Write(EncodeJobState(Generation(1), now), a.token());
  INFO(first.status().message());
  REQUIRE(first.ok());
  auto second = leader.Write(EncodeJobState(Generation(2), now), a.token());
  REQUIRE(second.ok());
  CHECK(*second > *first);

  auto got = standby.Read();
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->revision == *second);
  auto back = DecodeJobState((*got)->text, now, std::string("etcd ") + kState);
  REQUIRE(back.ok());
  CHECK(*back == Generation(2));
}

TEST_CASE("state store: a deposed leader cannot write, before or after another leads", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto ca = bed->Client(), cb = bed->Client(), admin = bed->Client();
  LeaderElection a(*ca, RealClock(), ElectionOptions{kLeader, "10.0.0.1:4000", 2});
  LeaderElection b(*cb, RealClock(), ElectionOptions{kLeader, "10.0.0.2:4000", 2});
  REQUIRE(a.Campaign().ok());
  auto seen = b.Campaign();
  REQUIRE(seen.ok());
  REQUIRE_FALSE(seen->leads);
  StateStore old_leader(*ca, kState, kLeader), new_leader(*cb, kState, kLeader);
  const Clock::time_point now = RealClock().Now();
  const std::string kept = EncodeJobState(Generation(1), now);
  REQUIRE(old_leader.Write(kept, a.token()).ok());

  // etcd drops a's lease; a has not renewed since, so it still thinks it leads.
  REQUIRE(admin->LeaseRevoke(a.lease_id()).ok());
  REQUIRE(a.Leads());
  auto orphan = old_leader.Write(EncodeJobState(Generation(7), now), a.token());
  CHECK(orphan.status().code() == Status::Code::kAborted);
  CHECK(orphan.status().message() == fmt::format("{}: not the leader with fencing token {} (nobody leads): the state "
                                                 "was not written", kState, a.token()));

  REQUIRE(b.WaitForVacancy(*seen, 10).ok());
  REQUIRE(b.Campaign().ok());
  REQUIRE(b.Leads());
  auto late = old_leader.Write(EncodeJobState(Generation(8), now), a.token());
  CHECK(late.status().code() == Status::Code::kAborted);
  CHECK(late.status().message().find(fmt::format("(10.0.0.2:4000 leads with token {})", b.token())) !=
        std::string::npos);
  auto got = new_leader.Read();
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->text == kept);  // neither of the deposed leader's writes landed
  REQUIRE(new_leader.Write(EncodeJobState(Generation(2), now), b.token()).ok());
}

TEST_CASE("state store: no token, or a state over the bound, is refused before etcd is asked", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto c = bed->Client();
  StateStore store(*c, kState, kLeader);
  CHECK(store.Write("{}", 0).status().code() == Status::Code::kAborted);
  auto big = store.Write(std::string(StateStore::kMaxBytes + 1, 'x'), 5);
  CHECK(big.status().code() == Status::Code::kInvalidArgument);
  CHECK(big.status().message().find("more than the 1048576 a write may carry") != std::string::npos);
  auto none = store.Read();
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

}  // namespace
}  // namespace ds::failover
