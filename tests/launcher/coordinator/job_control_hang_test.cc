// JobControl and hangs (job_control_hang.cc): a generation in which no rank
// advances for the threshold is said once, every agent of it is asked for
// its workers' stacks before anything is stopped, the report names the odd
// rank and its node, the stacks reach the job record, and the generation
// then fails and restarts as any failure does; an agent that does not
// answer is named in the report after the collection deadline; with a log
// directory the stacks go to stacks.gen<G>.txt, never through a link.
#include <algorithm>

#include <catch2/catch.hpp>

#include <unistd.h>

#include "tests/launcher/coordinator/fake_cluster.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds::test {
namespace {

using wire::MsgType;

JobSpec Hangs() {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = 2;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  job.elastic.hang_factor = 10;
  job.elastic.hang_floor = 2.0;
  return job;
}

const char* kTwoHosts = "w0 slots=2\nw1 slots=2\n";

void Beat(FakeCluster& c, int64_t step) {
  for (int node = 0; node < 2; ++node) {
    msg::Progress p{0, {}};
    for (int i = 0; i < 2; ++i) p.ranks.push_back({2 * node + i, step, 100000, -1, -1});
    c.Send(node, MsgType::kProgress, p.Encode());
  }
}

std::string EuStack(int pid, const std::string& where) {
  return "PID " + std::to_string(pid) + " - process\nTID " + std::to_string(pid) + ":\n#0  0x1 __GI___poll\n#1  0x2 " +
         where + "\n#2  0x3 main\n";
}

msg::Stacks StacksOf(int node, const std::string& rank_odd_where = "") {
  msg::Stacks s{0, {}};
  for (int i = 0; i < 2; ++i) {
    const int rank = 2 * node + i;
    const bool odd = rank == 3 && !rank_odd_where.empty();
    s.ranks.push_back({rank, 100 + rank, "eu-stack", EuStack(100 + rank, odd ? rank_odd_where : "gloo::AllreduceRing::run")});
  }
  return s;
}

int Said(const FakeCluster& c, const std::string& text) {
  int n = 0;
  for (const auto& line : c.notices()) n += line == text;
  return n;
}

}  // namespace

TEST_CASE("job control: a hung generation's stacks are taken before the stop, then it restarts", "[jobcontrol][hang]") {
  FakeCluster c(kTwoHosts, Hangs());
  c.Run();
  Beat(c, 40);
  c.Advance(1.0);
  CHECK(c.Count(0, MsgType::kDumpStacks) == 0);
  c.Advance(1.0);  // 2 s without a step: the floor (10 x 0.1 s is less)
  REQUIRE(c.Count(0, MsgType::kDumpStacks) == 1);
  REQUIRE(c.Count(1, MsgType::kDumpStacks) == 1);
  CHECK(c.Last<msg::DumpStacks>(1, MsgType::kDumpStacks)->generation == 0);
  CHECK(c.Count(0, MsgType::kStop) == 0);  // nothing stopped before the stacks are in
  c.Send(0, MsgType::kStacks, StacksOf(0).Encode());
  CHECK(c.Count(0, MsgType::kStop) == 0);
  c.Send(1, MsgType::kStacks, StacksOf(1, "Spin").Encode());
  CHECK(Said(c, "hang stacks, generation 0 (every rank's in the job record):") == 1);
  CHECK(Said(c, "  rank 3 (w1): in Spin (innermost: __GI___poll), step 40") == 1);
  CHECK(Said(c, "  3 others: in gloo::AllreduceRing::run (innermost: __GI___poll), step 40") == 1);
  CHECK(c.record().hang_stacks.find("=== rank 3 (w1), step 40, eu-stack ===\nPID 103") != std::string::npos);
  // The record keeps the report as printed (status and the report show it after the end).
  REQUIRE(c.record().hang_report.size() >= 2);
  CHECK(Said(c, "  " + c.record().hang_report[0]) == 1);
  CHECK(std::count(c.record().hang_report.begin(), c.record().hang_report.end(),
                   "3 others: in gloo::AllreduceRing::run (innermost: __GI___poll), step 40") == 1);
  CHECK(c.Count(0, MsgType::kStop) == 1);
  c.ConfirmStops();
  CHECK(c.control().generation() == 1);
  CHECK(c.record().restart_causes().at(0).what.find("hang: no rank advanced for 2.0 s") == 0);
}

TEST_CASE("job control: an agent that does not answer is named after the collection deadline", "[jobcontrol][hang]") {
  FakeCluster c(kTwoHosts, Hangs());
  c.Run();
  Beat(c, 40);
  c.Advance(2.0);
  REQUIRE(c.Count(1, MsgType::kDumpStacks) == 1);
  c.Send(0, MsgType::kStacks, StacksOf(0).Encode());
  c.Advance(9.0);
  CHECK(c.Count(0, MsgType::kStop) == 0);
  c.Advance(1.0);
  CHECK(Said(c, "  ranks 2, 3 (w1): no stack (no answer from w1 within 10 s), step 40") == 1);
  CHECK(Said(c, "  2 others: in gloo::AllreduceRing::run (innermost: __GI___poll), step 40") == 1);
  CHECK(c.Count(0, MsgType::kStop) == 1);
}

TEST_CASE("job control: the stacks go to the log directory, never through a symbolic link", "[jobcontrol][hang]") {
  testing::TempDir dir;
  JobSpec job = Hangs();
  job.log_dir = dir.path();
  FakeCluster c(kTwoHosts, job);
  c.Run();
  Beat(c, 40);
  c.Advance(2.0);
  c.Send(0, MsgType::kStacks, StacksOf(0).Encode());
  c.Send(1, MsgType::kStacks, StacksOf(1).Encode());
  CHECK(Said(c, "hang stacks, generation 0 (every rank's in " + (dir / "stacks.gen0.txt") + "):") == 1);
  CHECK(testing::ReadFile(dir / "stacks.gen0.txt") == c.record().hang_stacks);
  CHECK(c.record().hang_stacks_path == dir / "stacks.gen0.txt");  // the record's ending names it
  CHECK(testing::ReadFile(dir / "stacks.gen0.txt").find("=== rank 0 (w0), step 40, eu-stack ===\n") == 0);

  c.ConfirmStops();  // generation 1, whose file is someone's link
  REQUIRE(c.control().generation() == 1);
  REQUIRE(::symlink((dir / "elsewhere").c_str(), (dir / "stacks.gen1.txt").c_str()) == 0);
  c.Reserve();
  c.StartWorkers();
  for (int node = 0; node < 2; ++node) {
    msg::Progress p{1, {}};
    for (int i = 0; i < 2; ++i) p.ranks.push_back({2 * node + i, 7, 100000, -1, -1});
    c.Send(node, MsgType::kProgress, p.Encode());
  }
  c.Advance(2.0);
  c.Send(0, MsgType::kStacks, msg::Stacks{1, {}}.Encode());
  c.Send(1, MsgType::kStacks, msg::Stacks{1, {}}.Encode());
  CHECK(Said(c, "hang stacks, generation 1 (every rank's in the job record (" + (dir / "stacks.gen1.txt") +
                    " could not be written: Too many levels of symbolic links)):") == 1);
  CHECK(::access((dir / "elsewhere").c_str(), F_OK) != 0);
  CHECK(c.record().hang_stacks_path.empty());  // none written: the record keeps the stacks' text only
}

TEST_CASE("job control: ranks that keep stepping are not hung; off without hang_factor", "[jobcontrol][hang]") {
  FakeCluster c(kTwoHosts, Hangs());
  c.Run();
  for (int s = 0; s < 6; ++s) {
    Beat(c, 40 + s);
    c.Advance(1.0);
  }
  CHECK(c.Count(0, MsgType::kDumpStacks) == 0);
  JobSpec off = Hangs();
  off.elastic.hang_factor = 0;
  FakeCluster quiet(kTwoHosts, off);
  quiet.Run();
  Beat(quiet, 40);
  quiet.Advance(60.0);
  CHECK(quiet.Count(0, MsgType::kDumpStacks) == 0);
}

}  // namespace ds::test

namespace ds::test {

TEST_CASE("job control: an agent's hang_timeout verdict takes every rank's stacks first and names that rank",
          "[jobcontrol][hang]") {
  JobSpec job = Hangs();
  job.elastic.hang_factor = 0;  // only the agent's per-worker limit
  job.elastic.hang_timeout = 2.0;
  FakeCluster c(kTwoHosts, job);
  c.Run();
  Beat(c, 40);
  c.Send(1, MsgType::kWorkerHung, msg::WorkerHung{0, 3, 2000}.Encode());
  CHECK(Said(c, "w1: rank 3 made no step for 2 s (elastic.hang_timeout); taking every rank's stacks before anything "
                "is stopped") == 1);
  REQUIRE(c.Count(0, MsgType::kDumpStacks) == 1);
  REQUIRE(c.Count(1, MsgType::kDumpStacks) == 1);
  c.Send(0, MsgType::kWorkerHung, msg::WorkerHung{0, 1, 2000}.Encode());  // a second verdict while collecting
  CHECK(c.Count(0, MsgType::kDumpStacks) == 1);
  c.Send(0, MsgType::kStacks, StacksOf(0).Encode());
  CHECK(c.Count(0, MsgType::kStop) == 0);  // nothing stopped before every stack is in
  c.Send(1, MsgType::kStacks, StacksOf(1, "Spin").Encode());
  CHECK(Said(c, "  rank 3 (w1): in Spin (innermost: __GI___poll), step 40") == 1);
  CHECK(c.Count(0, MsgType::kStop) == 1);
  c.ConfirmStops();
  const auto& cause = c.record().restart_causes().at(0);
  CHECK(cause.host == "w1");
  CHECK(cause.what == "rank 3 made no step for 2 s (elastic.hang_timeout)");
  // Another generation's verdict is stale.
  c.Send(1, MsgType::kWorkerHung, msg::WorkerHung{0, 3, 2000}.Encode());
  CHECK(c.Count(1, MsgType::kDumpStacks) == 1);
}

}  // namespace ds::test
