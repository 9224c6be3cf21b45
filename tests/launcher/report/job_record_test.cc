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

}  // namespace
}  // namespace ds
