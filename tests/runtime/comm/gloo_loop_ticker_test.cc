// GlooLoopTicker (gloo_loop_ticker.h) on a real Gloo TCP device of this
// process: while it lives, the device's epoll set holds its timer, armed
// with the period (disarmed while paused); once it is destroyed (paused or
// not) the timer is off the set and closed,
// also when tickers come and go back to back (each destructor racing the
// loop's own turn); a ticker left with the device's last reference
// destroys it (the loop's thread joined, its descriptors closed). A
// GlooCommunicator's connect leaves no timer behind either.
#include <sys/timerfd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <gloo/transport/tcp/device.h>

#include "runtime/comm/gloo_loop_ticker.h"
#include "tests/runtime/multiproc.h"

using namespace ds::rt;

namespace {

// This process's descriptors whose /proc link is `what` (e.g. "anon_inode:[timerfd]").
std::set<int> FdsOf(const std::string& what) {
  std::set<int> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path(), ec).string() == what) out.insert(std::stoi(e.path().filename()));
  }
  return out;
}

// The descriptors registered with epoll set `epfd` ("tfd:" lines of its fdinfo).
std::set<int> Registered(int epfd) {
  std::set<int> out;
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(epfd));
  for (std::string word; in >> word;)
    if (word == "tfd:" && in >> word) out.insert(std::stoi(word));
  return out;
}

struct Device {
  std::shared_ptr<gloo::transport::Device> device;
  int epfd = -1;  // its loop's epoll set
};

Device MakeDevice() {
  const std::set<int> before = FdsOf("anon_inode:[eventpoll]");
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  Device d{gloo::transport::tcp::CreateDevice(attr)};
  for (int fd : FdsOf("anon_inode:[eventpoll]"))
    if (!before.count(fd)) d.epfd = fd;
  return d;
}

}  // namespace

TEST_CASE("a ticker keeps its timer on the device's loop while it lives, and takes it off and closes it", "[ticker]") {
  Device d = MakeDevice();
  REQUIRE(d.epfd >= 0);
  const std::set<int> timers_before = FdsOf("anon_inode:[timerfd]");
  {
    GlooLoopTicker ticker(d.device, std::chrono::microseconds(300));
    REQUIRE(ticker.ticking());
    std::set<int> timers = FdsOf("anon_inode:[timerfd]");
    for (int fd : timers_before) timers.erase(fd);
    REQUIRE(timers.size() == 1);
    const int tfd = *timers.begin();
    CHECK(Registered(d.epfd).count(tfd) == 1);
    itimerspec spec{};
    REQUIRE(::timerfd_gettime(tfd, &spec) == 0);
    CHECK(spec.it_interval.tv_sec == 0);
    CHECK(spec.it_interval.tv_nsec == 300000);
    ticker.Pause();  // while a store request waits: no turns
    REQUIRE(::timerfd_gettime(tfd, &spec) == 0);
    CHECK((spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0));
    CHECK(Registered(d.epfd).count(tfd) == 1);
    ticker.Resume();
    REQUIRE(::timerfd_gettime(tfd, &spec) == 0);
    CHECK(spec.it_interval.tv_nsec == 300000);
    ticker.Pause();  // destroyed while paused: it turns the loop again to take its timer off
  }
  CHECK(FdsOf("anon_inode:[timerfd]") == timers_before);
  CHECK(Registered(d.epfd).empty());
  for (int i = 0; i < 200; ++i) GlooLoopTicker back_to_back(d.device, std::chrono::microseconds(50));
  CHECK(FdsOf("anon_inode:[timerfd]") == timers_before);
  CHECK(Registered(d.epfd).empty());
}

TEST_CASE("a ticker left with a device's last reference destroys it: its loop's thread joined, nothing left open",
          "[ticker]") {
  const size_t threads = std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                       std::filesystem::directory_iterator());
  const std::set<int> fds = FdsOf("anon_inode:[timerfd]"), epolls = FdsOf("anon_inode:[eventpoll]");
  {
    Device d = MakeDevice();
    GlooLoopTicker ticker(d.device);
    REQUIRE(ticker.ticking());
    d.device.reset();
  }
  CHECK(std::distance(std::filesystem::directory_iterator("/proc/self/task"), std::filesystem::directory_iterator()) ==
        static_cast<std::ptrdiff_t>(threads));
  CHECK(FdsOf("anon_inode:[timerfd]") == fds);
  CHECK(FdsOf("anon_inode:[eventpoll]") == epolls);
}

TEST_CASE("a communicator's connect leaves no timer behind", "[ticker]") {
  testing::MultiProc mp;
  mp.Start(2, [&](Communicator&) -> int { return FdsOf("anon_inode:[timerfd]").empty() ? 0 : 3; });
  CHECK(mp.Wait(std::chrono::seconds(50)) == std::vector<int>{0, 0});
}
