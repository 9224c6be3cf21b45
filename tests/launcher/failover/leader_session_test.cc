// The coordinator's failover thread against a real etcd: it leads from
// Start, writes the newest state the io thread offered (a burst costs no
// more than a write per text, and the newest lands), refuses to start where
// another coordinator leads the job, and, deposed behind its back, writes
// nothing more under its old token, leads again under a higher one and
// writes the newest state there, but is deposed for good, writing nothing,
// when another coordinator led meanwhile (holds the key under a higher
// token, or wrote the state and left). With etcd gone, Flush says so and
// Stop still ends.
#include "launcher/failover/leader_session.h"

#include <future>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "launcher/failover/state_store.h"
#include "tests/launcher/failover/etcd_bed.h"
#include "tests/test_util/wait_until.h"

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

// A leader that wrote generation 1 and whose clock only the test moves (it
// renews only then: nothing here races with it), and what OnDeposed says.
class DeposableLeader {
 public:
  // `listen`: OnDeposed at once (else the test calls Listen).
  explicit DeposableLeader(bool listen = true) : bed_(EtcdBed::Start(1)), why_(said_.get_future()) {
    auto s = LeaderSession::Start(Options(*bed_, "10.0.0.1:4000"), clock_);
    REQUIRE(s.ok());
    session_ = std::move(s).value();
    session_->Offer("{\"generation\": 1}");
    REQUIRE(session_->Flush(10).ok());
    if (listen) Listen();
    admin_ = bed_->Client();
  }
  void Listen() {
    session_->OnDeposed([this](const std::string& w) { said_.set_value(w); });
  }
  // Past its lease's TTL: it renews, steps down, campaigns. The reason it
  // was deposed, once said (within 15 s), else "".
  std::string WaitDeposed() {
    PastTheLease();
    return Said(std::chrono::seconds(15));
  }
  void PastTheLease() { clock_.Advance(std::chrono::seconds(3)); }
  std::string Said(std::chrono::seconds within) {
    return why_.wait_for(within) == std::future_status::ready ? why_.get() : "";
  }
  LeaderSession& session() { return *session_; }
  etcd::Client& admin() { return *admin_; }
  const EtcdBed& bed() const { return *bed_; }

 private:
  std::unique_ptr<EtcdBed> bed_;
  FakeClock clock_;
  std::promise<std::string> said_;  // outlives the session, whose thread sets it
  std::future<std::string> why_;
  std::unique_ptr<LeaderSession> session_;
  std::unique_ptr<etcd::Client> admin_;
};

TEST_CASE("leader session: another coordinator took the key while it had no lease: deposed for good, naming it; "
          "it writes nothing more", "[etcd]") {
  DeposableLeader l;
  REQUIRE(l.admin().Delete(kLeader).ok());  // its lease ended (a partition) ...
  auto taken = l.admin().Put(kLeader, "10.0.0.2:4000");  // ... and a standby won the key
  REQUIRE(taken.ok());
  CHECK(l.WaitDeposed() == fmt::format("10.0.0.2:4000 leads it now (fencing token {})", *taken));
  CHECK(l.session().Deposed());
  CHECK_FALSE(l.session().Leads());
  l.session().Offer("{\"generation\": 0, \"stale\": true}");
  CHECK(l.session().Flush(1).code() == Status::Code::kTimeout);
  CHECK(Stored(l.bed()) == "{\"generation\": 1}");
  REQUIRE(l.admin().Delete(kLeader).ok());  // the standby's job ends: the key is free again
  l.session().Stop();
  CHECK(l.session().elections() == 1);  // it never campaigned again
  auto key = l.admin().Get(kLeader);
  REQUIRE(key.ok());
  CHECK_FALSE(key->has_value());
}

// A run registers OnDeposed once it leads and set up what the callback
// needs; deposed before that (a standby frozen as it took over), the run
// must still hear it, or it lingers, commanding nobody, instead of leaving.
TEST_CASE("leader session: deposed before anyone listened, OnDeposed says it at once", "[etcd]") {
  DeposableLeader l(/*listen=*/false);
  REQUIRE(l.admin().Delete(kLeader).ok());
  auto taken = l.admin().Put(kLeader, "10.0.0.2:4000");
  REQUIRE(taken.ok());
  l.PastTheLease();
  REQUIRE(testing::WaitUntil([&] { return l.session().Deposed(); }, std::chrono::seconds(15)));
  l.Listen();
  CHECK(l.Said(std::chrono::seconds(0)) == fmt::format("10.0.0.2:4000 leads it now (fencing token {})", *taken));
  REQUIRE(l.admin().Delete(kLeader).ok());
  l.session().Stop();
}

TEST_CASE("leader session: another coordinator led and left while it had no lease: leading again, it sees the "
          "newer state, resigns and is deposed; the other's state stays", "[etcd]") {
  DeposableLeader l;
  {  // a whole leadership in between: the key taken, the state written under it, the key gone
    REQUIRE(l.admin().Delete(kLeader).ok());
    auto token = l.admin().Put(kLeader, "10.0.0.2:4000");
    REQUIRE(token.ok());
    StateStore other(l.admin(), kState, kLeader);
    REQUIRE(other.Write("{\"generation\": 3, \"phase\": \"done\"}", *token).ok());
    REQUIRE(l.admin().Delete(kLeader).ok());
  }
  CHECK(l.WaitDeposed().find("another coordinator led it meanwhile (it wrote the job's state at revision ") == 0);
  CHECK_FALSE(l.session().Leads());
  CHECK(Stored(l.bed()) == "{\"generation\": 3, \"phase\": \"done\"}");
  auto key = l.admin().Get(kLeader);  // the lead it won back is resigned
  REQUIRE(key.ok());
  CHECK_FALSE(key->has_value());
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
