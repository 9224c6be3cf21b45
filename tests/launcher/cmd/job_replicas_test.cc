// A standby's etcd member that cannot form yet (the other members are not
// there: a loaded machine, a slow ssh) when the leader's launcher ends the
// standby with SIGTERM: the wait ends at once and the member and its files
// go with the standby, long before the launcher's SIGKILL (before, the
// member sat out its 60 s and the SIGKILL left its files).
#include "launcher/cmd/job_replicas.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "launcher/cmd/standby.h"
#include "launcher/failover/job_ca.h"
#include "launcher/failover/replica_brief.h"
#include "tests/integration/proc_harness.h"
#include "tests/launcher/failover/etcd_bed.h"
#include "tests/test_util/wait_until.h"

namespace ds {
namespace {

using std::chrono::seconds;

// Member 2's brief of a 3-member cluster on loopback whose members 0 and 1 never start.
std::string LoneMemberBrief(const std::string& job_id) {
  auto ca = failover::JobCa::Create(job_id);
  REQUIRE(ca.ok());
  std::vector<failover::ReplicaMember> members;
  for (int k = 0; k < 3; ++k)
    members.push_back({"m" + std::to_string(k), "127.0.0.1", testing::UnusedPort(), testing::UnusedPort()});
  auto brief = MemberBrief(*ca, members, 2, job_id, /*join_existing=*/false);
  REQUIRE(brief.ok());
  return *brief;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) out.push_back(e.path().filename());
  return out;
}

TEST_CASE("replica member: SIGTERMed while its member waits for the others, it goes at once with the member's files") {
  testing::TempDir dir("dsl-member-forms");
  const std::string xdg = dir / "xdg";
  REQUIRE(::mkdir(xdg.c_str(), 0700) == 0);
  const std::string brief = LoneMemberBrief("forms");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // a standby's part, as `dslaunch --standby` runs it
    ::setenv("XDG_RUNTIME_DIR", xdg.c_str(), 1);
    CatchStandbyStop();
    JobSpec job;
    const auto run = RunReplicaMember(job, "forms", brief);
    const std::string want = "coordinator.replicas: member m2: ended by a signal while it formed";
    if (run.ok() || run.status().message() != want)
      std::fprintf(stderr, "RunReplicaMember: %s\n", run.ok() ? "formed" : run.status().message().c_str());
    std::fflush(stderr);
    ::_exit(!run.ok() && run.status().message() == want ? 0 : 1);
  }
  // Its member runs (its log has etcd's first lines) and cannot have a quorum.
  const std::string log = xdg + "/dslaunch/forms.etcd.m2.log";
  const bool started = testing::WaitUntil([&] {
    std::error_code ec;
    return std::filesystem::file_size(log, ec) > 0 && !ec;
  }, seconds(30));
  if (!started) ::kill(child, SIGKILL);
  REQUIRE(started);
  REQUIRE(::kill(child, SIGTERM) == 0);
  CHECK(testing::WaitExit(child, seconds(20)) == 0);  // the member's wait is 60 s
  const std::vector<std::string> left = Entries(xdg + "/dslaunch");
  INFO("left: " << left.size());
  CHECK(left.empty());
}

}  // namespace
}  // namespace ds
