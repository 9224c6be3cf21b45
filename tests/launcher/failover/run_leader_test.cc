// A real run that leads its job in a site's etcd (coordinator: etcd:, TLS
// with client certificates): while it runs, the job's state in etcd is the
// generation it is in (read by the test between the restart and the end,
// so it was written at the transition, not at the end); the end is written
// too, and the leader key is gone once dslaunch exits (resigned, nothing
// waits for the lease). replicas: is refused until a run starts its own
// etcd, and an etcd nobody serves is an error naming the endpoint.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "common/clock.h"
#include "launcher/coordinator/job_state.h"
#include "tests/integration/proc_harness.h"
#include "tests/launcher/failover/etcd_bed.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// A generation-0 rank 1 that fails once; generation 1 says so and waits for `go`.
constexpr const char* kWorker = R"(
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  [ "$RANK" = 1 ] && exit 3
  exec sleep 60
fi
echo "GEN1 $RANK"
while [ ! -f go ]; do sleep 0.05; done
)";

std::string JobFile(const EtcdBed& bed, const std::string& extra = "") {
  return fmt::format(
      "command: [sh, worker.sh]\nelastic: {{max_restarts: 1}}\ncoordinator:\n  etcd: [{}]\n  ca: {}\n  cert: {}\n"
      "  key: {}\n{}",
      bed.endpoints()[0], bed.client_tls().ca_file, bed.client_tls().cert_file, bed.client_tls().key_file, extra);
}

// Every key under /dslaunch/ ending in `leaf`.
std::vector<etcd::KeyValue> Keys(const EtcdBed& bed, const std::string& leaf) {
  auto c = bed.Client();
  auto r = c->Range(etcd::RangeRequest{"/dslaunch/", etcd::PrefixEnd("/dslaunch/")});
  REQUIRE(r.ok());
  std::vector<etcd::KeyValue> out;
  for (const auto& kv : r->kvs)
    if (kv.key.size() > leaf.size() && kv.key.compare(kv.key.size() - leaf.size(), leaf.size(), leaf) == 0)
      out.push_back(kv);
  return out;
}

JobState Stored(const EtcdBed& bed) {
  auto states = Keys(bed, "/state");
  REQUIRE(states.size() == 1);
  auto s = DecodeJobState(states[0].value, RealClock().Now(), states[0].key);
  INFO(states[0].value);
  REQUIRE(s.ok());
  return *s;
}

TEST_CASE("run leader: the job's state in a site's etcd follows its transitions, and the leader resigns at the end",
          "[etcd][run]") {
  auto bed = EtcdBed::Start(1);
  TempDir dir("dsl-run-leader");
  WriteFile(dir / "worker.sh", kWorker);
  WriteFile(dir / "job.yaml", JobFile(*bed));
  Child c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 2), "job.yaml"}, dir.path(), JobEnv(dir));
  REQUIRE(WaitForText(c.out_path, "GEN1 0", std::chrono::seconds(60)));
  const JobState running = Stored(*bed);
  CHECK(running.generation == 1);
  CHECK(running.budget.restarts == 1);
  CHECK(running.phase == CoordState::kRunning);
  CHECK(running.world_size == 2);
  auto leader = Keys(*bed, "/leader");
  REQUIRE(leader.size() == 1);
  CHECK(leader[0].lease != 0);
  CHECK(leader[0].key == fmt::format("/dslaunch/{}/leader", running.job_id));
  WriteFile(dir / "go", "");
  const int code = WaitExit(c.pid, seconds(60));
  INFO(ReadFile(c.err_path));
  CHECK(code == 0);
  CHECK(Stored(*bed).phase == CoordState::kDone);
  CHECK(Keys(*bed, "/leader").empty());
  CHECK(ReadFile(c.err_path).find(fmt::format("coordinator: leads job {} in etcd ({}, fencing token {})",
                                              running.job_id, bed->endpoints()[0], leader[0].create_revision)) !=
        std::string::npos);
}

TEST_CASE("run leader: replicas: is refused before any agent starts; an etcd nobody serves is named", "[etcd][run]") {
  TempDir dir("dsl-run-leader");
  WriteFile(dir / "worker.sh", "echo ran\n");
  WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\ncoordinator:\n  replicas: 3\n");
  Child c;
  CHECK(Run({DslaunchPath(), "--hostfile", HostfileFor(dir, 3, 1), "job.yaml"}, dir.path(), &c, seconds(60),
            JobEnv(dir)) == 2);
  const std::string err = ReadFile(c.err_path);
  CHECK(err.find("job.yaml:3:13: 'coordinator.replicas': a run does not start the job's own etcd members yet") !=
        std::string::npos);
  CHECK(ReadFile(c.out_path).find("ran") == std::string::npos);

  const int port = UnusedPort();
  WriteFile(dir / "job.yaml", fmt::format("command: [sh, worker.sh]\ncoordinator: {{etcd: [127.0.0.1:{}]}}\n", port));
  const int code = Run({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 1), "job.yaml"}, dir.path(), &c,
                       seconds(60), JobEnv(dir));
  CHECK(code != 0);
  const std::string unreachable = ReadFile(c.err_path);
  INFO(unreachable);
  CHECK(unreachable.find("coordinator.etcd: cannot campaign for /dslaunch/") != std::string::npos);
  CHECK(unreachable.find(fmt::format("127.0.0.1:{}", port)) != std::string::npos);
  CHECK(ReadFile(c.out_path).find("ran") == std::string::npos);
}

}  // namespace
}  // namespace ds::testing
