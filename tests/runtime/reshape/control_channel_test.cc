// ControlChannel (runtime/reshape/control_channel.h) against this test as the agent,
// over a real SOCK_SEQPACKET pair: what it accepts as DSLAUNCH_CONTROL_FD, a
// WorkerReshape aborting the communicators it watches, the answer, frames it
// skips, a newer request replacing an older one, the agent's end closing,
// and a communicator that cannot abort (answered ok: 0 at once).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/reshape/control_channel.h"
#include "wire/frame_io.h"

namespace ds::rt {
namespace {

using Clock = std::chrono::steady_clock;

// A communicator that counts its aborts; `can_abort` false plays NCCL here.
class CountingComm : public LocalCommunicator {
 public:
  explicit CountingComm(bool can_abort = true) : can_abort_(can_abort) {}
  bool Abort() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++aborts_;
    }
    cv_.notify_all();
    return can_abort_;
  }
  int aborts() {
    std::lock_guard<std::mutex> lock(mu_);
    return aborts_;
  }
  // Waits (30 s at most) until it was aborted `n` times.
  bool WaitAborts(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return aborts_ >= n; });
  }

 private:
  const bool can_abort_;
  std::mutex mu_;
  std::condition_variable cv_;
  int aborts_ = 0;
};

struct Pair {
  Pair() { REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0); }
  ~Pair() {
    if (agent >= 0) ::close(agent);
  }
  // The worker's end goes to the channel (which closes it); the test keeps the agent's.
  std::unique_ptr<ControlChannel> Open() {
    auto channel = ControlChannel::Open(fds[1], "DSLAUNCH_CONTROL_FD=" + std::to_string(fds[1]));
    REQUIRE(channel.ok());
    return std::move(channel).value();
  }
  void Send(const Bytes& packet) const {
    REQUIRE(::send(agent, packet.data(), packet.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(packet.size()));
  }
  void Send(const msg::WorkerReshape& m) const { Send(EncodeFrame(wire::MsgType::kWorkerReshape, m.Encode())); }
  msg::WorkerReshaped Answer() const {
    pollfd p{agent, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 30000) == 1);
    uint8_t buf[1024];
    const ssize_t n = ::recv(agent, buf, sizeof(buf), 0);
    REQUIRE(n >= static_cast<ssize_t>(wire::kHeaderSize));
    auto h = DecodeHeader(buf);
    REQUIRE(h.ok());
    CHECK(h->type == wire::MsgType::kWorkerReshaped);
    auto m = msg::WorkerReshaped::Decode(Bytes(buf + wire::kHeaderSize, buf + n));
    REQUIRE(m.ok());
    return *m;
  }
  int fds[2] = {-1, -1};
  int& agent = fds[0];
};

Clock::time_point Soon() { return Clock::now() + std::chrono::seconds(30); }

}  // namespace

TEST_CASE("DSLAUNCH_CONTROL_FD must be one end of a SOCK_SEQPACKET pair", "[control]") {
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  auto from_pipe = ControlChannel::Open(pipe_fds[0], "DSLAUNCH_CONTROL_FD=7");
  CHECK(from_pipe.status().message() ==
        "DSLAUNCH_CONTROL_FD=7: expected one end of a SOCK_SEQPACKET socket pair (dsagent's control channel), got "
        "another kind of file");
  int stream[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream) == 0);
  CHECK_FALSE(ControlChannel::Open(stream[0], "DSLAUNCH_CONTROL_FD=8").ok());
  for (int fd : {pipe_fds[0], pipe_fds[1], stream[0], stream[1]}) ::close(fd);
  CHECK(ControlChannel::Open(pipe_fds[0], "DSLAUNCH_CONTROL_FD=9").status().message() ==
        "DSLAUNCH_CONTROL_FD=9: not an open file descriptor");
}

TEST_CASE("a WorkerReshape aborts the watched communicators; Take gives it, Answer tells the agent", "[control]") {
  Pair pair;
  auto channel = pair.Open();
  CountingComm training, snapshots, dropped;
  channel->Watch(&training);
  channel->Watch(&snapshots);
  channel->Watch(&dropped);
  channel->Unwatch(&dropped);
  CHECK_FALSE(channel->requested());
  pair.Send(msg::WorkerReshape{4, 1, 2, 30, "0123456789abcdef"});
  REQUIRE(channel->WaitForRequest(Soon()));
  CHECK(channel->requested());
  CHECK(training.aborts() == 1);
  CHECK(snapshots.aborts() == 1);
  CHECK(dropped.aborts() == 0);
  std::optional<ReshapeRequest> r = channel->Take();
  REQUIRE(r);
  CHECK(r->reshape.generation == 4);
  CHECK(r->reshape.rank == 1);
  CHECK(r->reshape.world == 2);
  CHECK(r->reshape.step == 30);
  CHECK(r->reshape.set == "0123456789abcdef");
  CHECK_FALSE(channel->requested());
  CHECK_FALSE(channel->Take());
  REQUIRE(channel->Answer(msg::WorkerReshaped{4, 1, "", 1234}).ok());
  const msg::WorkerReshaped a = pair.Answer();
  CHECK(a.generation == 4);
  CHECK(a.ok == 1);
  CHECK(a.micros == 1234);
}

TEST_CASE("frames that are not a WorkerReshape are skipped; a newer request replaces an older one", "[control]") {
  Pair pair;
  auto channel = pair.Open();
  CountingComm comm;
  channel->Watch(&comm);
  pair.Send(Bytes{1, 2, 3});  // shorter than a header
  Bytes lying = EncodeFrame(wire::MsgType::kWorkerReshape, msg::WorkerReshape{}.Encode());
  lying.push_back(0);  // one byte more than its header says
  pair.Send(lying);
  pair.Send(EncodeFrame(wire::MsgType::kWorkerReshaped, msg::WorkerReshaped{}.Encode()));  // another type
  pair.Send(EncodeFrame(wire::MsgType::kWorkerReshape, Bytes{0, 0}));                     // truncated payload
  pair.Send(msg::WorkerReshape{5, 0, 3, 10, "0123456789abcdef"});
  pair.Send(msg::WorkerReshape{6, 2, 3, 20, "fedcba9876543210"});
  REQUIRE(comm.WaitAborts(2));  // both requests read, nothing before them counted
  CHECK(comm.aborts() == 2);
  std::optional<ReshapeRequest> r = channel->Take();
  REQUIRE(r);
  CHECK(r->reshape.generation == 6);
  CHECK(r->reshape.set == "fedcba9876543210");
  CHECK_FALSE(channel->Take());
  // Watched after a request arrived and before it was taken: aborted at once.
  pair.Send(msg::WorkerReshape{7, 0, 1, 30, "fedcba9876543210"});
  REQUIRE(channel->WaitForRequest(Soon()));
  CountingComm late;
  channel->Watch(&late);
  CHECK(late.aborts() == 1);
}

TEST_CASE("the agent closing its end ends the wait for a request", "[control]") {
  Pair pair;
  auto channel = pair.Open();
  ::close(pair.agent);
  pair.agent = -1;
  CHECK_FALSE(channel->WaitForRequest(Clock::time_point::max()));  // returns: no deadline needed
}

TEST_CASE("a waiter also wakes for its own condition", "[control]") {
  Pair pair;
  auto channel = pair.Open();
  std::atomic<bool> done{false};
  std::thread other([&] {
    done = true;
    channel->Wake();
  });
  CHECK_FALSE(channel->WaitForRequest(Clock::time_point::max(), [&] { return done.load(); }));
  other.join();
}

TEST_CASE("a communicator that cannot abort: the channel answers ok 0 itself, no request is kept", "[control]") {
  Pair pair;
  auto channel = pair.Open();
  CountingComm nccl(/*can_abort=*/false);
  channel->Watch(&nccl);
  pair.Send(msg::WorkerReshape{9, 0, 2, 40, "0123456789abcdef"});
  const msg::WorkerReshaped a = pair.Answer();
  CHECK(a.generation == 9);
  CHECK(a.ok == 0);
  CHECK(a.why ==
        "this worker's communicator cannot abort a collective in flight (trainer.backend nccl): no in-place reshape");
  CHECK_FALSE(channel->requested());
}

}  // namespace ds::rt
