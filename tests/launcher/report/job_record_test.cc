// JobRecord: the local rank it hands the LogMux (for --local-ranks-filter).
#include "launcher/report/job_record.h"

#include <cstdio>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"

namespace ds {
namespace {

TEST_CASE("job record: a node's workers get local ranks in assignment order, per generation", "[record]") {
  FILE* out = std::tmpfile();
  {
    LogMuxOptions o{"", "never", out, false};
    o.terminal_local_ranks = {1};
    LogMux mux(std::move(o));
    JobRecord record(&mux);
    // Generation 0: node 0 runs ranks 0-1, node 1 ranks 2-3.
    record.OnAssigned(0, 0, "a");
    record.OnAssigned(1, 0, "a");
    record.OnAssigned(2, 1, "b");
    record.OnAssigned(3, 1, "b");
    for (int r = 0; r < 4; ++r) record.OnOutput(r, 1, "g0 rank " + std::to_string(r));
    // Generation 1 on node 1 alone: ranks 0-1 there.
    record.NewGeneration(1);
    record.OnAssigned(0, 1, "b");
    record.OnAssigned(1, 1, "b");
    record.OnOutput(0, 1, "g1 rank 0");
    record.OnOutput(1, 1, "g1 rank 1");
    mux.Flush();
  }
  CHECK(testing::ReadStream(out) == "a:1 g0 rank 1\nb:3 g0 rank 3\nb:1 g1 rank 1\n");
  std::fclose(out);
}

TEST_CASE("job record: a rank moves assigned -> running -> exited only; a late or repeated message moves nothing",
          "[record]") {
  using P = WorkerPhase;
  for (P from : {P::kAssigned, P::kRunning, P::kExited})
    for (P to : {P::kAssigned, P::kRunning, P::kExited}) {
      INFO(WorkerPhaseName(from) << " -> " << WorkerPhaseName(to));
      const bool allowed = (from == P::kAssigned && to != P::kAssigned) || (from == P::kRunning && to == P::kExited);
      CHECK(WorkerPhaseMoveAllowed(from, to) == allowed);
    }
  JobRecord record;
  record.OnAssigned(0, 0, "a");
  record.OnAssigned(1, 0, "a");
  CHECK(record.workers().at(0).phase == P::kAssigned);
  record.OnStarted(0, 100);
  CHECK(record.workers().at(0).running());
  CHECK(record.OnExited(1, 0, 127, 0, false));  // could not be started: exited without running
  record.OnStarted(1, 101);                      // a start that arrives after its end moves nothing
  CHECK(record.workers().at(1).exited());
  CHECK(record.num_started() == 1);
  CHECK_FALSE(record.OnExited(0, 100, 0, 0, false));
  CHECK_FALSE(record.OnExited(0, 100, 1, 0, false));  // its second end is not recorded
  CHECK(record.workers().at(0).ExitedOk());
}

}  // namespace
}  // namespace ds
