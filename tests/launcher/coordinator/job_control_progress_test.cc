// JobControl and the agents' progress summaries (msg::Progress): each
// node's ranks land in progress() with their node and numbers in seconds, a
// summary of another generation is ignored, a restart forgets every rank,
// a truncated summary is a protocol error, and a slow node is said once.
#include <catch2/catch.hpp>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

using wire::MsgType;

JobSpec Elastic() {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = 2;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  return job;
}

const char* kTwoHosts = "w0 slots=2\nw1 slots=2\n";

msg::Progress Summary(uint32_t gen, int first_rank, int64_t step) {
  msg::Progress p;
  p.generation = gen;
  p.ranks.push_back({first_rank, step, 250000, 200000, 128000, 230});
  p.ranks.push_back({first_rank + 1, step, 250000, -1, -1});
  return p;
}

}  // namespace

TEST_CASE("job control: the agents' summaries fill the per-rank view", "[jobcontrol][progress]") {
  FakeCluster c(kTwoHosts, Elastic());
  c.Run();
  c.Send(1, MsgType::kProgress, Summary(0, 2, 40).Encode());
  c.Send(0, MsgType::kProgress, Summary(0, 0, 41).Encode());
  const auto& ranks = c.control().progress().Ranks();
  REQUIRE(ranks.size() == 4);
  CHECK(ranks[0].rank == 0);
  CHECK(ranks[0].node == 0);
  CHECK(ranks[0].step == 41);
  CHECK(ranks[0].step_seconds == 0.25);
  CHECK(ranks[0].compute_seconds == 0.2);
  CHECK(ranks[0].samples_per_second == 128.0);
  CHECK(ranks[1].compute_seconds < 0);
  CHECK(ranks[1].samples_per_second < 0);
  CHECK(ranks[0].save_stall_seconds == 0.00023);
  CHECK(ranks[1].save_stall_seconds < 0);
  CHECK(ranks[3].node == 1);
  CHECK(ranks[3].step == 40);
}

TEST_CASE("job control: another generation's summary is ignored, a restart forgets every rank",
          "[jobcontrol][progress]") {
  FakeCluster c(kTwoHosts, Elastic());
  c.Run();
  c.Send(0, MsgType::kProgress, Summary(0, 0, 7).Encode());
  c.Exit(1, 1);
  c.ConfirmStops();
  REQUIRE(c.control().generation() == 1);
  CHECK(c.control().progress().Ranks().empty());
  c.Send(0, MsgType::kProgress, Summary(0, 0, 8).Encode());  // late, from generation 0
  CHECK(c.control().progress().Ranks().empty());
}

TEST_CASE("job control: a truncated summary is a protocol error", "[jobcontrol][progress]") {
  FakeCluster c(kTwoHosts, Elastic());
  c.Run();
  Bytes cut = Summary(0, 0, 7).Encode();
  cut.pop_back();
  CHECK_THROWS_WITH(c.Send(0, MsgType::kProgress, cut), Catch::Contains("truncated Progress payload"));
}

TEST_CASE("job control: a node slower in compute than its peers is said once as a notice", "[jobcontrol][progress]") {
  FakeCluster c("w0 slots=2\nw1 slots=2\nw2 slots=2\nw3 slots=2\n", Elastic());
  c.Run();
  auto summaries = [&](int64_t step) {
    for (int node = 0; node < 4; ++node) {
      msg::Progress p;
      const int64_t compute = node == 3 ? 480000 : 200000;
      for (int i = 0; i < 2; ++i) p.ranks.push_back({2 * node + i, step, 500000, compute, -1});
      c.Send(node, MsgType::kProgress, p.Encode());
    }
  };
  for (int s = 0; s <= 4; ++s) {
    summaries(10 + s);
    c.Advance(1.0);
  }
  int slow = 0;
  for (const auto& n : c.notices()) slow += n == "slow: w3 (ranks 6-7) 2.4x the median compute time for the last 1 s";
  CHECK(slow == 1);
  CHECK(c.control().slow_nodes() == std::vector<uint32_t>{3});
}

}  // namespace ds::test
