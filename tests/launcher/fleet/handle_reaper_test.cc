// HandleReaper: Reap() returns while a handle's Terminate() still blocks (as
// an SSH handle's does on a dark session); the reaper ends its handles in
// order, survives one that throws, and its destructor waits for them all.
// In-process only: fake handles, no sockets, no sleeps.
#include <catch2/catch.hpp>

#include <future>
#include <stdexcept>
#include <vector>

#include "launcher/fleet/handle_reaper.h"

namespace ds {
namespace {

// What the reaper did to one fake handle; read by the test after it is joined.
struct Trace {
  std::vector<int> terminated;  // handle ids, in the order Terminate() ran
  std::vector<int> destroyed;
};

// Terminate() waits until `release` is ready (when given), or throws.
class FakeHandle final : public AgentHandle {
 public:
  FakeHandle(int id, Trace& trace, std::shared_future<void> release = {}, bool throws = false)
      : id_(id), trace_(trace), release_(std::move(release)), throws_(throws) {}
  ~FakeHandle() override { trace_.destroyed.push_back(id_); }
  bool Running() override { return true; }
  void Terminate() override {
    if (release_.valid()) release_.wait();
    trace_.terminated.push_back(id_);
    if (throws_) throw std::runtime_error("channel gone");
  }
  int ExitStatus() override { return -1; }
  int exit_fd() const override { return -1; }

 private:
  int id_;
  Trace& trace_;
  std::shared_future<void> release_;
  bool throws_;
};

TEST_CASE("handle reaper: Reap returns while a handle's Terminate blocks; the destructor waits for it",
          "[fleet][reaper]") {
  Trace trace;
  std::promise<void> release;
  {
    HandleReaper reaper;
    reaper.Reap(std::make_unique<FakeHandle>(1, trace, release.get_future().share()));
    reaper.Reap(std::make_unique<FakeHandle>(2, trace));  // returns although handle 1 blocks the reaper
    reaper.Reap(nullptr);
    release.set_value();
  }  // joins: both ended
  CHECK(trace.terminated == std::vector<int>{1, 2});
  CHECK(trace.destroyed == std::vector<int>{1, 2});
}

TEST_CASE("handle reaper: a handle that throws is destroyed and the next one still ended", "[fleet][reaper]") {
  Trace trace;
  {
    HandleReaper reaper;
    reaper.Reap(std::make_unique<FakeHandle>(1, trace, std::shared_future<void>(), /*throws=*/true));
    reaper.Reap(std::make_unique<FakeHandle>(2, trace));
  }
  CHECK(trace.terminated == std::vector<int>{1, 2});
  CHECK(trace.destroyed == std::vector<int>{1, 2});
}

}  // namespace
}  // namespace ds
