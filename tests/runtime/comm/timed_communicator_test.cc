// TimedCommunicator: collectives (plain and persistent) called on the thread
// that made it add their time to in_collectives(); calls from another thread
// (overlap_comm's background reductions) add nothing; everything is
// forwarded. The inner collective waits until the clock moves, so each timed
// call takes a non-zero time whatever the clock's resolution.
#include <catch2/catch.hpp>

#include <thread>

#include "runtime/comm/timed_communicator.h"

namespace ds::rt {
namespace {

class TickingCommunicator final : public LocalCommunicator {
 public:
  void Barrier() override {
    ++barriers;
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() == start) {
    }
  }
  void AllReduceSum(float*, size_t) override { Barrier(); }
  int barriers = 0;
};

TEST_CASE("timed communicator: the owner's collectives count, another thread's do not", "[timed_communicator]") {
  TickingCommunicator inner;
  TimedCommunicator timed(inner);
  CHECK(timed.in_collectives().count() == 0);
  timed.Barrier();
  const auto after_one = timed.in_collectives();
  CHECK(after_one.count() > 0);
  std::thread other([&] { timed.Barrier(); });
  other.join();
  CHECK(timed.in_collectives() == after_one);
  CHECK(inner.barriers == 2);
}

TEST_CASE("timed communicator: persistent collectives made through it are timed", "[timed_communicator]") {
  TickingCommunicator inner;
  TimedCommunicator timed(inner);
  float x[2] = {1, 2};
  auto persistent = timed.MakePersistentAllReduce(x, 2);  // the default: AllReduceSum on each Run
  const auto made = timed.in_collectives();
  persistent->Run();
  CHECK(timed.in_collectives() > made);
  CHECK(inner.barriers == 1);
  CHECK(timed.rank() == 0);
  CHECK(timed.size() == 1);
}

}  // namespace
}  // namespace ds::rt
