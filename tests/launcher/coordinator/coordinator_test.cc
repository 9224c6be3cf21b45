// The coordinator under hostile input: garbage, bad magic, a frame announcing
// 4 GiB, unauthenticated and wrong-secret clients, a half-open connection
// that never sends. Each is dropped and the store keeps serving others.
#include "launcher/coordinator/coordinator.h"

#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "common/client_conn.h"
#include "common/hmac_auth.h"
#include "common/store_client.h"

namespace ds {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Server {
  explicit Server(double handshake_timeout = 5.0) {
    CoordinatorOptions o;
    o.job_id = "jobX";
    o.secret = "topsecret";
    o.handshake_timeout = handshake_timeout;
    coord = std::make_unique<Coordinator>(io, plan, o, record);
    REQUIRE(coord->Listen().ok());
    thread = std::thread([this] { io.run(); });
  }
  ~Server() {
    io.stop();
    thread.join();
  }
  // A store client still works end to end.
  void CheckStillServing() {
    auto c = StoreClient::Connect(coord->address(), StoreToken("topsecret", "jobX", 0), milliseconds(5000));
    REQUIRE(c.ok());
    REQUIRE((*c)->Set("alive", {1}).ok());
    CHECK((*c)->Get("alive", milliseconds(100)).ok());
  }
  UniqueFd Raw() {
    auto fd = ConnectTcp(coord->address(), "", Clock::now() + milliseconds(5000));
    REQUIRE(fd.ok());
    return std::move(fd).value();
  }
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(io);
  LaunchPlan plan;
  JobRecord record;
  std::unique_ptr<Coordinator> coord;
  std::thread thread;
};

// True when the server closes the connection (EOF or reset), within 10 s.
bool ClosedByServer(int fd) {
  auto deadline = Clock::now() + milliseconds(10000);
  while (true) {
    auto f = ReadFrame(fd, deadline);
    if (f.ok()) continue;  // e.g. the Error frame before the close
    return f.status().code() != Status::Code::kTimeout;
  }
}

void SendRaw(int fd, const Bytes& b) { REQUIRE(::send(fd, b.data(), b.size(), MSG_NOSIGNAL) == (ssize_t)b.size()); }

TEST_CASE("coordinator: garbage bytes close only that connection", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  SendRaw(fd.get(), Bytes(junk.begin(), junk.end()));
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: a frame announcing 4 GiB is refused unread", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  Bytes header = EncodeFrame(wire::MsgType::kHello, {});
  header[8] = header[9] = header[10] = header[11] = 0xff;
  SendRaw(fd.get(), header);
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: store requests before the handshake are refused", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  SendRaw(fd.get(), EncodeFrame(wire::MsgType::kStoreSet, msg::StoreSet{"k", {1}}.Encode()));
  auto f = ReadFrame(fd.get(), Clock::now() + milliseconds(5000));
  REQUIRE(f.ok());
  CHECK(f->type == wire::MsgType::kError);
  CHECK(msg::Error::Decode(f->payload)->message == "expected Hello first");
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: an agent with the wrong secret is refused", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  msg::Hello h;
  h.role = wire::Role::kAgent;
  h.job_id = "jobX";
  Status st = ClientHandshake(fd.get(), h, "not-the-secret", Clock::now() + milliseconds(5000));
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == "authentication failed (wrong secret or token)");
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: an agent of another job is refused", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  msg::Hello h;
  h.role = wire::Role::kAgent;
  h.job_id = "other";
  Status st = ClientHandshake(fd.get(), h, "topsecret", Clock::now() + milliseconds(5000));
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == "unknown job id 'other'");
}

TEST_CASE("coordinator: a truncated frame is dropped", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  Bytes f = EncodeFrame(wire::MsgType::kHello, msg::Hello{}.Encode());
  f.resize(f.size() - 3);
  SendRaw(fd.get(), f);
  ::shutdown(fd.get(), SHUT_WR);
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: a half-open connection that never sends is dropped after the handshake timeout",
          "[coordinator]") {
  Server s(/*handshake_timeout=*/0.2);
  UniqueFd idle = s.Raw();
  s.CheckStillServing();  // served while the idle one is pending
  CHECK(ClosedByServer(idle.get()));
}

}  // namespace
}  // namespace ds
