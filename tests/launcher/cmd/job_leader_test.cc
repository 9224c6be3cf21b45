// A standby's campaign against a real etcd that stops answering (frozen by
// SIGSTOP, as a loaded machine or a raft election after a member's loss
// makes it for a while): the standby says so once and campaigns again
// until etcd answers, then leads, instead of giving the job up (CI: under
// load the last standby of cluster_failover_replicas gave up on one slow
// campaign, and the job with it). While etcd is frozen, a job that ended
// still ends the wait.
#include "launcher/cmd/job_leader.h"

#include <signal.h>

#include <future>
#include <mutex>

#include <catch2/catch.hpp>

#include "common/log.h"
#include "tests/launcher/failover/etcd_bed.h"
#include "tests/test_util/wait_until.h"

namespace ds {
namespace {

using testing::EtcdBed;

JobSpec JobIn(const EtcdBed& bed) {
  JobSpec job;
  job.coordinator.etcd = bed.endpoints();
  job.coordinator.ca = bed.client_tls().ca_file;
  job.coordinator.cert = bed.client_tls().cert_file;
  job.coordinator.key = bed.client_tls().key_file;
  job.elastic.heartbeat_timeout = 1;  // each etcd call waits 1 s at most
  return job;
}

// dslaunch's own diagnostics while it lives.
class Said {
 public:
  Said() {
    LogSetSink([this](std::string line) {
      std::lock_guard<std::mutex> lock(mu_);
      text_ += line;
    });
  }
  ~Said() { LogSetSink(nullptr); }
  bool Has(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    return text_.find(what) != std::string::npos;
  }

 private:
  std::mutex mu_;
  std::string text_;
};

TEST_CASE("job leader: a standby whose campaign finds etcd frozen campaigns again and leads once it answers") {
  auto bed = EtcdBed::Start(1);
  REQUIRE(bed);
  const JobSpec job = JobIn(*bed);
  Said said;
  REQUIRE(::kill(bed->member(0).pid(), SIGSTOP) == 0);
  auto led = std::async(std::launch::async,
                        [&] { return LeadJobAsStandby(job, "frozen1", "10.0.0.2:4000", [] { return false; }); });
  const bool tried = testing::WaitUntil([&] { return said.Has("cannot campaign"); }, std::chrono::seconds(30));
  ::kill(bed->member(0).pid(), SIGCONT);
  REQUIRE(tried);
  auto session = led.get();
  REQUIRE(session.ok());
  REQUIRE(*session);
  CHECK((*session)->Leads());
  CHECK(said.Has("trying again"));
  (*session)->Stop();
}

TEST_CASE("job leader: a standby whose job ended while etcd is frozen gives the campaign up") {
  auto bed = EtcdBed::Start(1);
  REQUIRE(bed);
  const JobSpec job = JobIn(*bed);
  REQUIRE(::kill(bed->member(0).pid(), SIGSTOP) == 0);
  auto session = LeadJobAsStandby(job, "frozen2", "10.0.0.2:4000", [] { return true; });
  ::kill(bed->member(0).pid(), SIGCONT);
  REQUIRE(session.ok());
  CHECK_FALSE(*session);
}

}  // namespace
}  // namespace ds
