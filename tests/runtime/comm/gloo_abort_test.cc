// GlooCommunicator::Abort (gloo_communicator.h), with forked ranks (one
// process each: Abort finds its pairs' sockets as those its Connect made, so
// ranks that connect at once in one process would share them). A collective
// that cannot finish (one rank never joins it) is aborted from another thread
// once the calling thread sleeps in it, and returns at once with CommError
// saying so: on the async-mode context (allreduce) and on the sync-mode one
// (the persistent allreduce, blocked in recv). The collective timeout is a
// minute: a broken Abort shows as a timeout's error, not "aborted".
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/comm/timed_communicator.h"
#include "tests/runtime/multiproc.h"

using namespace ds::rt;
using ds::rt::testing::MultiProc;

namespace {

// The state letter of thread `tid` of this process (R running, S sleeping...).
char ThreadState(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '?';
}

// Runs `collective` on this thread while another thread aborts `abort` once
// this one sleeps inside it; what() of the CommError it threw.
std::string AbortedWhileBlocked(Communicator& abort, const std::function<void()>& collective) {
  const pid_t me = static_cast<pid_t>(syscall(SYS_gettid));
  std::atomic<bool> entered{false};
  std::thread aborter([&] {
    while (!entered) std::this_thread::yield();
    while (ThreadState(me) != 'S') std::this_thread::yield();  // blocked in the collective
    abort.Abort();
  });
  std::string what = "(returned without an error)";
  entered = true;
  try {
    collective();
  } catch (const CommError& e) {
    what = e.what();
  }
  aborter.join();
  return what;
}

// What a rank that stays out of the collective does: keeps its connections
// open until the test closes `hold` (the parent's end of a pipe), then leaves.
[[noreturn]] void Hold(int hold) {
  char c;
  while (::read(hold, &c, 1) < 0 && errno == EINTR) {
  }
  _exit(0);
}

// A rank's abort shuts its sockets down: a peer still finishing its own
// Connect would fail there. The peer says it is past its Connect with a byte
// on `connected` (a pipe) before the rank blocks.
void SayConnected(const int connected[2]) {
  const char byte = 0;
  (void)!::write(connected[1], &byte, 1);
}
void AwaitConnected(const int connected[2]) {
  char byte;
  (void)!::read(connected[0], &byte, 1);
}

void Report(const MultiProc& mp, int rank, const std::string& what) {
  std::ofstream(mp.dir() + "/rank" + std::to_string(rank)) << what;
}

std::string Reported(const MultiProc& mp, int rank) {
  std::ifstream in(mp.dir() + "/rank" + std::to_string(rank));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("Abort ends an allreduce in flight on another thread, and the peer's next collective", "[abort]") {
  int go[2], done[2], connected[2];  // rank 1 -> rank 0: aborted; rank 0 -> rank 1: tried, connected
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(done) == 0);
  REQUIRE(::pipe(connected) == 0);
  MultiProc mp;
  mp.Start(2, [&](Communicator& c) -> int {
    std::vector<float> a(1000, 1.f);
    char byte = 0;
    if (c.rank() == 1) {  // blocks: rank 0 does not join yet
      AwaitConnected(connected);
      Report(mp, 1, AbortedWhileBlocked(c, [&] { c.AllReduceSum(a.data(), a.size()); }));
      // Later calls throw at once, naming the abort; aborting again is harmless.
      c.Abort();
      try {
        c.Barrier();
      } catch (const CommError& e) {
        std::ofstream(mp.dir() + "/rank1.later") << e.what();
      }
      (void)!::write(go[1], &byte, 1);
      (void)!::read(done[0], &byte, 1);  // alive (its sockets open) while rank 0 tries
    } else {
      SayConnected(connected);
      (void)!::read(go[0], &byte, 1);
      try {  // rank 1's connections were shut down: a failure at once, not a timeout
        c.AllReduceSum(a.data(), a.size());
      } catch (const CommError& e) {
        Report(mp, 0, e.what());
      }
      (void)!::write(done[1], &byte, 1);
    }
    _exit(0);
  }, std::chrono::seconds(60));
  for (int fd : {go[0], go[1], done[0], done[1], connected[0], connected[1]}) ::close(fd);
  CHECK(mp.Wait(std::chrono::seconds(50)) == std::vector<int>{0, 0});
  CHECK_THAT(Reported(mp, 1), Catch::StartsWith("rank 1: allreduce aborted ("));
  CHECK_THAT(Reported(mp, 0), Catch::StartsWith("rank 0: allreduce failed"));
  CHECK_THAT(Reported(mp, 0), !Catch::Contains("Timed out"));
  std::ifstream later(mp.dir() + "/rank1.later");
  CHECK(std::string(std::istreambuf_iterator<char>(later), {}) ==
        "rank 1: barrier: communicator is unusable after: allreduce aborted (" +
            Reported(mp, 1).substr(std::string("rank 1: allreduce aborted (").size()));
}

TEST_CASE("Abort wakes a persistent allreduce blocked in recv (sync-mode pairs), through TimedCommunicator",
          "[abort]") {
  int hold[2], connected[2];
  REQUIRE(::pipe(hold) == 0);
  REQUIRE(::pipe(connected) == 0);
  MultiProc mp;
  mp.Start(2, [&](Communicator& c) -> int {
    ::close(hold[1]);
    std::vector<float> a(4096, 1.f);
    TimedCommunicator timed(c);  // the trainer's wrapper forwards Abort
    auto op = timed.MakePersistentAllReduce(a.data(), a.size());
    if (c.rank() == 1) {
      SayConnected(connected);
      Hold(hold[0]);  // never runs its half
    }
    AwaitConnected(connected);
    Report(mp, 0, AbortedWhileBlocked(timed, [&] { op->Run(); }));
    _exit(0);
  }, std::chrono::seconds(60));
  ::close(hold[0]);
  ::close(connected[0]);
  ::close(connected[1]);
  CHECK(mp.WaitRank(0, std::chrono::seconds(50)) == 0);
  ::close(hold[1]);
  CHECK(mp.Wait() == std::vector<int>{0, 0});
  CHECK_THAT(Reported(mp, 0), Catch::StartsWith("rank 0: allreduce aborted ("));
}

TEST_CASE("Abort between collectives: the next one throws without touching the network", "[abort]") {
  MultiProc mp;
  mp.Start(2, [&](Communicator& c) -> int {
    c.Barrier();  // both ranks connected (else one exiting early fails the other's connect)
    c.Abort();
    std::vector<float> a(10, 1.f);
    try {
      c.AllReduceSum(a.data(), a.size());
    } catch (const CommError& e) {
      Report(mp, c.rank(), e.what());
    }
    _exit(0);
  }, std::chrono::seconds(60));
  CHECK(mp.Wait(std::chrono::seconds(50)) == std::vector<int>{0, 0});
  CHECK(Reported(mp, 0) == "rank 0: allreduce: communicator is unusable after: the communicator was aborted");
  LocalCommunicator alone;
  CHECK(alone.Abort());  // one rank never waits for anyone
}

