// Slow nodes on real processes (issue 28): three local nodes whose workers
// send the long step beat (compute time and samples) as a PyTorch script
// would; the node whose worker reports 2.5x the others' compute is named in
// one line, once, and a healthy job gets no report. Proves the whole path:
// datagram -> agent summary -> Progress with the heartbeat -> coordinator's
// view -> StragglerDetector -> notice.
#include <catch2/catch.hpp>

#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// Steps of 100 ms for 6 s; compute 20 ms a step, `slow_us` on RANK 2.
std::string Worker(int slow_us) {
  return "import os, socket, struct, time\n"
         "rank = int(os.environ['RANK']); token = os.environ['DSLAUNCH_HEARTBEAT_TOKEN'].encode()\n"
         "host, port = os.environ['DSLAUNCH_HEARTBEAT_ADDR'].rsplit(':', 1)\n"
         "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
         "compute = " + std::to_string(slow_us) + " if rank == 2 else 20000\n"
         "end = time.monotonic() + 6\n"
         "step = 0\n"
         "while time.monotonic() < end:\n"
         "    time.sleep(0.1)\n"
         "    step += 1\n"
         "    s.sendto(struct.pack('>qq', rank, step) + token + struct.pack('>qq', compute, 16), (host, int(port)))\n";
}

std::string RunThreeNodes(const TempDir& dir, int slow_us) {
  WriteFile(dir / "worker.py", Worker(slow_us));
  WriteFile(dir / "job.yaml", "command: [python3, worker.py]\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", HostfileFor(dir, 3, 1), "job.yaml"}, dir.path(), &c, seconds(60),
                 JobEnv(dir));
  std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(code == 0);
  return err;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("stragglers: the node whose rank computes 2.5x longer is named once", "[integration]") {
  TempDir dir;
  const std::string err = RunThreeNodes(dir, 50000);
  INFO(err);
  CHECK(Count(err, "dslaunch: slow: 127.0.0.3 (rank 2) 2.5x the median compute time for the last ") == 1);
  CHECK(Count(err, "slow: ") == 1);
}

TEST_CASE("stragglers: a healthy job gets no report", "[integration]") {
  TempDir dir;
  const std::string err = RunThreeNodes(dir, 20000);
  INFO(err);
  CHECK(err.find("slow: ") == std::string::npos);
}

}  // namespace
}  // namespace ds::testing
