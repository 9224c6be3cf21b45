#include "launcher/cmd/job_list.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

JobListEntry Entry(const std::string& id, int64_t pid, bool live, const std::string& state, int exit_code,
                   double elapsed, time_t started, const std::string& command = "") {
  JobListEntry e;
  e.view.job_id = id;
  e.view.pid = pid;
  e.view.state = state;
  e.view.exit_code = exit_code;
  e.view.elapsed_seconds = elapsed;
  e.view.world_size = 4;
  e.view.restarts = 1;
  e.view.max_restarts = 3;
  e.live = live;
  e.started = started;
  e.command = command;
  return e;
}

TEST_CASE("job list: one line per job, running or ended, word for word") {
  CHECK(JobListTable({}).empty());
  const time_t t = 1796165536;  // 2026-12-01 22:52:16 UTC
  CHECK(JobListTable({Entry("3fa9c1e2d0b4", 4121, true, "running", -1, 185.4, t),
                      Entry("9780b0b9f82e", 15179, false, "done", 137, 42, t - 3600, "python3 -u train.py --lr 0.1"),
                      Entry("0b1c2d3e4f50", 77, false, "done", 0, 7300, t - 86400, "/bin/sh -c 'exit 0'")}) ==
        "JOB           PID      STARTED (UTC)           STATE     EXIT  TIME     WORLD  RESTARTS  COMMAND\n"
        "3fa9c1e2d0b4  4121     2026-12-01 22:52:16     running   -     3m05s    4      1/3       -\n"
        "9780b0b9f82e  15179    2026-12-01 21:52:16     ended     137   42s      4      1/3       python3 -u train.py --lr 0.1\n"
        "0b1c2d3e4f50  77       2026-11-30 22:52:16     ended     0     2h01m    4      1/3       /bin/sh -c 'exit 0'\n");
}

}  // namespace
}  // namespace ds
