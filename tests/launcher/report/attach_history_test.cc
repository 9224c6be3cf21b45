// launcher/report/attach_history.cc: the lines `dslaunch attach` opens with, word for word.
#include "launcher/report/attach_history.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("attach history: the phase, the step, every restart and the leader", "[attach]") {
  JobView v;
  v.job_id = "abc";
  v.state = "running";
  v.generation = 1;
  v.world_size = 4;
  v.max_restarts = 3;
  v.elapsed_seconds = 185;
  v.nodes = {{0, "w0", "running"}, {1, "w1", "lost"}, {2, "w2", "running"}};
  v.ranks = {{0, 0, "w0", 120}, {1, 2, "w2", 118}};
  Failure f;
  f.host = "w1";
  f.what = "agent lost: no heartbeat for 2s";
  CHECK(AttachHistory(v, {f},
                      {"this coordinator took job abc over from a lost one",
                       "took over generation 1: its 2 worker(s) on 2 node(s) ran on, none restarted"}) ==
        "dslaunch attach: job abc: running generation 1, world size 4 on 2 nodes, for 3m05s, at step 120\n"
        "dslaunch attach: 1 restart so far (of at most 3):\n"
        "dslaunch attach:   1. after host w1: agent lost: no heartbeat for 2s\n"
        "dslaunch attach: this coordinator took job abc over from a lost one\n"
        "dslaunch attach: took over generation 1: its 2 worker(s) on 2 node(s) ran on, none restarted\n");
  v.ranks.clear();
  v.state = "waiting";
  v.nodes.resize(1);
  CHECK(AttachHistory(v, {}, {}) ==
        "dslaunch attach: job abc: waiting generation 1, world size 4 on 1 node, for 3m05s\n"
        "dslaunch attach: no restart so far\n");
}

}  // namespace
}  // namespace ds
