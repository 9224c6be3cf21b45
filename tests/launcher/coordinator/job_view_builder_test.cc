// BuildJobView from a JobControl driven by fake agents (fake_cluster.h): a
// node's heartbeat round trip from its echo of the coordinator's stamped
// Ping, the snapshot figures from the agents' SnapshotHeld, and which nodes
// are reported slow (in compute, or by their link).
#include "launcher/coordinator/job_view_builder.h"

#include <catch2/catch.hpp>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

using wire::MsgType;

JobSpec Job() {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  return job;
}

TEST_CASE("job view: a node's round trip is the coordinator's clock at its echo minus the stamp", "[job_view]") {
  FakeCluster c("a slots=1\nb slots=1\n", Job());
  c.Run();
  JobView v = BuildJobView(c.control(), c.record(), c.control().LastHeard(0));
  CHECK(v.nodes[0].rtt_seconds < 0);  // none measured yet
  c.Advance(1.0);  // the coordinator's Pings, stamped
  auto ping = c.Last<msg::Ping>(0, MsgType::kPing);
  REQUIRE(ping);
  CHECK(ping->sent_micros != 0);
  CHECK(ping->echo_micros == 0);
  c.Advance(0.004);
  c.Send(0, MsgType::kPing, msg::Ping{0, ping->sent_micros}.Encode());
  v = BuildJobView(c.control(), c.record(), c.control().LastHeard(0));
  CHECK(v.nodes[0].rtt_seconds == Approx(0.004));
  CHECK(v.nodes[1].rtt_seconds < 0);  // node 1 did not answer
  c.Send(1, MsgType::kPing, msg::Ping{0, ping->sent_micros + 60'000'000}.Encode());  // not our stamp: ignored
  CHECK(BuildJobView(c.control(), c.record(), c.control().LastHeard(0)).nodes[1].rtt_seconds < 0);
}

TEST_CASE("job view: a node slow in compute and one with a slow link are marked, each by its kind", "[job_view]") {
  FakeCluster c("a slots=1\nb slots=1\nc slots=1\nd slots=1\n", Job());
  c.Run();
  for (int s = 0; s < 6; ++s) {  // d answers every Ping 80 ms late; c is 2.4x slower in compute
    c.Advance(s == 0 ? 1.0 : 0.92);
    for (int n = 0; n < 4; ++n) {
      msg::Progress p{0, {{n, 10 + s, 500000, n == 2 ? 480000 : 200000, -1}}};
      c.Send(n, MsgType::kProgress, p.Encode());
    }
    c.EchoPings({0.001, 0.001, 0.001, 0.08});
  }
  const JobView v = BuildJobView(c.control(), c.record(), c.control().LastHeard(0));
  CHECK_FALSE((v.nodes[0].slow || v.nodes[0].slow_link || v.nodes[1].slow || v.nodes[1].slow_link));
  CHECK((v.nodes[2].slow && !v.nodes[2].slow_link));
  CHECK((v.nodes[3].slow_link && !v.nodes[3].slow));
}

TEST_CASE("job view: snapshot figures come from the agents' SnapshotHeld, off when snapshots are", "[job_view]") {
  FakeCluster off("a slots=1\n", Job());
  off.Run();
  CHECK_FALSE(BuildJobView(off.control(), off.record(), off.control().LastHeard(0)).snapshots);

  JobSpec job = Job();
  job.checkpoint.dir = "/ckpt/{host}";
  FakeCluster c("a slots=1\nb slots=1\n", job);
  c.RegisterAll();
  for (int node = 0; node < 2; ++node)
    c.Send(node, MsgType::kSnapshotReady, msg::SnapshotReady{"10.0.0.1:5000", "/dev/shm/x", ""}.Encode());
  for (int node = 0; node < 2; ++node) {
    auto f = c.Last<msg::Fetch>(node, MsgType::kFetch);
    REQUIRE(f);
    c.Send(node, MsgType::kFetched, msg::Fetched{f->generation, f->step, f->id.set, 0, 0, ""}.Encode());
  }
  c.Reserve();
  c.StartWorkers();
  const msg::SnapshotId id{"feed0001", 2, 0, "c0", std::string(16, 'a')};
  msg::SnapshotHeld held;
  held.added = {{40, 0, id, 0, 1, 4096}, {40, 1, id, 1, 1, 4096}};
  held.counters.handoff_bytes = 4096;
  held.counters.sent_bytes = 4096;
  held.counters.sent_micros = 2000;
  c.Send(0, MsgType::kSnapshotHeld, held.Encode());
  const JobView v = BuildJobView(c.control(), c.record(), c.control().LastHeard(0));
  CHECK(v.snapshots);
  CHECK(v.snapshots_taken == 1);
  CHECK(v.snapshot_step == 40);
  CHECK(v.nodes[0].snapshot.step == 40);
  CHECK(v.nodes[0].snapshot.in_memory);
  CHECK(v.nodes[0].snapshot.bytes_held == 8192);
  CHECK(v.nodes[0].snapshot.handed_bytes == 4096);
  CHECK(v.nodes[0].snapshot.replica_seconds == Approx(0.002));
  CHECK(v.nodes[1].snapshot.step == -1);
}

}  // namespace
}  // namespace ds::test
