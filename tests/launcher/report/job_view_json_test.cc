// A JobView through JSON and back (the status socket, the job record), and
// what is refused.
#include "launcher/report/job_view_json.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("job view json: every field survives the round trip", "[job_view_json]") {
  JobView v;
  v.job_id = "ab12";
  v.pid = 4242;
  v.state = "running";
  v.elapsed_seconds = 12.5;
  v.generation = 1;
  v.restarts = 1;
  v.max_restarts = 3;
  v.world_size = 2;
  v.ranks_running = 2;
  v.agents_registered = 2;
  v.nodes_lost = 1;
  v.exit_code = 0;
  v.snapshots = true;
  v.snapshots_taken = 7;
  v.snapshot_step = 60;
  v.recovery_point_step = 50;
  v.steps_at_risk = 12;
  v.worst_steps_at_risk = 30;
  v.nodes = {{0, "n0", "running", 0.5, 0.00125, {60, true, 4096, 8192, 2048, 0.5, 1024, 0.25}},
             {1, "n\"1", "lost", -1}};
  v.nodes[0].slow_link = true;
  v.ranks = {{0, 0, "n0", 40, 0.25, 64, 0.0005, 40, 0.4123, 30, 0.875}, {1, 0, "n0", 40, 0.25, 64}};
  Result<JobView> back = ParseJobViewJson(JobViewJson(v));
  REQUIRE(back.ok());
  CHECK(JobViewJson(*back) == JobViewJson(v));
  CHECK(back->nodes[1].host == "n\"1");
  CHECK(back->ranks[0].step == 40);
  CHECK(back->ranks[0].save_stall_seconds == 0.0005);
  CHECK(back->ranks[0].loss_step == 40);
  CHECK(back->ranks[0].loss == 0.4123);
  CHECK(back->ranks[0].accuracy_step == 30);
  CHECK(back->ranks[0].accuracy == 0.875);
  CHECK(back->ranks[1].loss_step == -1);  // said none: no "loss" key
  CHECK(JobViewJson(v).find(R"("loss":{"step":40,"value":0.4123})") != std::string::npos);
  CHECK(back->snapshots_taken == 7);
  CHECK(back->snapshot_step == 60);
  CHECK(back->recovery_point_step == 50);
  CHECK(back->steps_at_risk == 12);
  CHECK(back->worst_steps_at_risk == 30);
  CHECK(back->nodes[0].rtt_seconds == 0.00125);
  CHECK(back->nodes[0].snapshot.step == 60);
  CHECK(back->nodes[0].snapshot.in_memory);
  CHECK(back->nodes[0].snapshot.replica_seconds == 0.5);
  CHECK(back->nodes[1].rtt_seconds == -1);
  CHECK(back->nodes[1].snapshot.step == -1);
  CHECK(back->nodes[0].slow_link);
  CHECK_FALSE(back->nodes[0].slow);
  CHECK_FALSE(back->nodes[1].slow_link);
}

TEST_CASE("job view json: a record of a job before round trips and snapshot figures still reads", "[job_view_json]") {
  const std::string old = R"({"job_id":"ab12","pid":1,"state":"done","elapsed_seconds":3.0,"generation":0,)"
                          R"("restarts":0,"max_restarts":0,"world_size":1,"ranks_running":0,"agents_registered":0,)"
                          R"("nodes_lost":0,"exit_code":0,"nodes":[{"node":0,"host":"n0","state":"ended",)"
                          R"("heard_seconds_ago":-1.0}],"ranks":[]})";
  Result<JobView> v = ParseJobViewJson(old);
  REQUIRE(v.ok());
  CHECK_FALSE(v->snapshots);
  CHECK(v->snapshot_step == -1);
  CHECK(v->recovery_point_step == -1);
  CHECK(v->steps_at_risk == -1);
  CHECK(v->nodes[0].rtt_seconds == -1);
  CHECK(v->nodes[0].snapshot.step == -1);
  CHECK_FALSE(v->nodes[0].slow);
}

TEST_CASE("job view json: not JSON, or not a view, is an error that says so", "[job_view_json]") {
  CHECK(ParseJobViewJson("{").status().message() == "status: not a JSON object");
  CHECK(ParseJobViewJson("{\"job_id\": 3}").status().message().rfind("status: not a job's view: ", 0) == 0);
}

}  // namespace
}  // namespace ds
