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
  v.nodes = {{0, "n0", "running", 0.5}, {1, "n\"1", "lost", -1}};
  v.ranks = {{0, 0, "n0", 40, 0.25, 64}};
  Result<JobView> back = ParseJobViewJson(JobViewJson(v));
  REQUIRE(back.ok());
  CHECK(JobViewJson(*back) == JobViewJson(v));
  CHECK(back->nodes[1].host == "n\"1");
  CHECK(back->ranks[0].step == 40);
}

TEST_CASE("job view json: not JSON, or not a view, is an error that says so", "[job_view_json]") {
  CHECK(ParseJobViewJson("{").status().message() == "status: not a JSON object");
  CHECK(ParseJobViewJson("{\"job_id\": 3}").status().message().rfind("status: not a job's view: ", 0) == 0);
}

}  // namespace
}  // namespace ds
