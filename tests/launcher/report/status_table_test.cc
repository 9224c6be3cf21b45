// `dslaunch status`'s table from a JobView: exact text, with and without
// snapshots, round trips as a person reads them.
#include "launcher/report/status_table.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

JobView TwoNodes() {
  JobView v;
  v.job_id = "ab12";
  v.pid = 42;
  v.state = "running";
  v.elapsed_seconds = 5;
  v.world_size = 2;
  v.ranks_running = 2;
  v.nodes = {{0, "n0", "running", 0.3, 0.0015, {60, true, 4096000, 0, 0, 0, 0, 0}},
             {1, "n1", "lost", -1, -1, {40, false, 2048000, 0, 0, 0, 0, 0}}};
  return v;
}

TEST_CASE("status table: per node when heard, its heartbeat round trip and, with snapshots on, what it holds",
          "[status_table]") {
  JobView v = TwoNodes();
  v.snapshots = true;
  v.snapshots_taken = 3;
  v.snapshot_step = 60;
  CHECK(StatusTable(v) ==
        "job ab12 (dslaunch pid 42): running\n"
        "dslaunch 5s gen 0 (restarts left 0) ranks 2/2 snapshots 3 (newest step 60)\n"
        "recovery point: none yet (no save is on enough nodes to survive a loss)\n"
        "NODE  HOST                     STATE    HEARD      RTT      SNAPSHOT\n"
        "0     n0                       running  0.3s ago   1.5ms    step 60 memory 4.1 MB\n"
        "1     n1                       lost     -          -        step 40 disk 2.0 MB\n");
  v.recovery_point_step = 40;
  v.steps_at_risk = 27;
  v.worst_steps_at_risk = 55;
  CHECK_THAT(StatusTable(v), Catch::Contains("ranks 2/2 snapshots 3 (newest step 60) at risk 27 steps\n"
                                             "recovery point: step 40; a node loss now would cost 27 steps (at "
                                             "worst so far 55)\n"));
  v.recovery_point_step = v.steps_at_risk = v.worst_steps_at_risk = -1;
  v.snapshots = false;  // no SNAPSHOT column
  CHECK(StatusTable(v).find("NODE  HOST                     STATE    HEARD      RTT\n") != std::string::npos);
  CHECK(StatusTable(v).find("SNAPSHOT") == std::string::npos);
}

TEST_CASE("status table: ranks with their step, step time and samples/s", "[status_table]") {
  JobView v = TwoNodes();
  v.ranks = {{0, 0, "n0", 40, 0.25, 64}, {1, 1, "n1", -1, 0, -1}};
  const std::string t = StatusTable(v);
  CHECK(t.find("RANK  NODE  HOST                           STEP  STEP_TIME  SAMPLES/S\n"
               "0     0     n0                               40      0.25s         64\n"
               "1     1     n1                                -          -          -\n") != std::string::npos);
}

TEST_CASE("status table: round trips in ms below a second, '-' when none", "[status_table]") {
  CHECK(RoundTripText(-1) == "-");
  CHECK(RoundTripText(0.0008) == "0.8ms");
  CHECK(RoundTripText(1.2) == "1.20s");
  CHECK(SnapshotHeldText({}) == "-");
}

}  // namespace
}  // namespace ds
