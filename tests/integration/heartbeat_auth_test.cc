// Step heartbeats are authenticated (wire/step_heartbeat.h): a process
// that can reach an agent's UDP heartbeat port but does not hold the
// worker's DSLAUNCH_HEARTBEAT_TOKEN can neither arm a healthy worker's hang
// check nor keep a hung worker alive. Real jobs; the forger is this test.
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "proc_harness.h"
#include "wire/step_heartbeat.h"

namespace ds::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Sends forged beats for `rank` to the agent's "127.0.0.1:PORT": the old
// 16-byte form, and the 48-byte form with a token of the right length that
// is not the worker's (and with the worker's own token's length but empty).
class Forger {
 public:
  explicit Forger(const std::string& addr) : fd_(::socket(AF_INET, SOCK_DGRAM, 0)) {
    auto colon = addr.rfind(':');
    to_.sin_family = AF_INET;
    to_.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(colon + 1))));
    ::inet_pton(AF_INET, addr.substr(0, colon).c_str(), &to_.sin_addr);
  }
  ~Forger() { ::close(fd_); }
  void Burst(int64_t rank, int64_t step) {
    std::string old_form = EncodeStepBeat({rank, step, ""});
    std::string wrong = EncodeStepBeat({rank, step, std::string(kStepBeatTokenChars, '0')});
    for (const std::string* d : {&old_form, &wrong})
      ::sendto(fd_, d->data(), d->size(), 0, reinterpret_cast<const sockaddr*>(&to_), sizeof(to_));
  }

 private:
  int fd_;
  sockaddr_in to_{};
};

// The heartbeat address the worker wrote to `dir`/addr (one line).
std::string WorkerHeartbeatAddr(const TempDir& dir) {
  REQUIRE(WaitForText(dir / "addr", "\n", seconds(30)));
  std::string addr = ReadFile(dir / "addr");
  return addr.substr(0, addr.size() - 1);
}

TEST_CASE("heartbeat auth: forged beats do not arm the hang check of a worker that never beats",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 1);
  WriteFile(dir / "worker.sh",
            "echo \"$DSLAUNCH_HEARTBEAT_ADDR\" > addr.tmp && mv addr.tmp addr\n"
            "sleep 3\n"
            "echo finished\n");
  WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\nelastic:\n  hang_timeout: 1s\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), JobEnv(dir));
  Forger forger(WorkerHeartbeatAddr(dir));
  for (int i = 0; i < 10; ++i) {  // before the fix one of these armed a 1 s hang check
    forger.Burst(0, i);
    std::this_thread::sleep_for(milliseconds(20));
  }
  int code = WaitExit(c.pid, seconds(30));
  std::string err = ReadFile(c.err_path);
  INFO(err << ReadFile(c.out_path));
  CHECK(code == 0);
  CHECK(err.find("made no step") == std::string::npos);
  CHECK(ReadFile(c.out_path).find("finished") != std::string::npos);
}

TEST_CASE("heartbeat auth: forged beats do not keep a hung worker alive", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 1);
  // One real beat (with the worker's own token), then the worker hangs.
  WriteFile(dir / "worker.py",
            "import os, socket, struct, time\n"
            "addr = os.environ['DSLAUNCH_HEARTBEAT_ADDR']\n"
            "host, port = addr.rsplit(':', 1)\n"
            "token = os.environ['DSLAUNCH_HEARTBEAT_TOKEN'].encode()\n"
            "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(\n"
            "    struct.pack('>qq', int(os.environ['RANK']), 1) + token, (host, int(port)))\n"
            "open('addr.tmp', 'w').write(addr + '\\n'); os.rename('addr.tmp', 'addr')\n"
            "time.sleep(60)\n");
  WriteFile(dir / "job.yaml", "command: [python3, worker.py]\nelastic:\n  hang_timeout: 1s\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), JobEnv(dir));
  const std::string addr = WorkerHeartbeatAddr(dir);
  std::atomic<bool> stop{false};
  std::thread forging([&] {  // forged "step N" every 100 ms, until dslaunch ends
    Forger forger(addr);
    for (int64_t step = 2; !stop; ++step) {
      forger.Burst(0, step);
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  int code = WaitExit(c.pid, seconds(30));  // hang_timeout 1s, then the stacks (10 s at most)
  stop = true;
  forging.join();
  std::string err = ReadFile(c.err_path);
  INFO(err << ReadFile(c.out_path));
  CHECK(code == 137);
  CHECK(err.find("rank 0 made no step for 1 s (elastic.hang_timeout)") != std::string::npos);
}

}  // namespace
}  // namespace ds::testing
