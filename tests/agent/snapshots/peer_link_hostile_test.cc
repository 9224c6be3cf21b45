// The peer link (agent/snapshots/peer_link.h) against hostile peers, over real
// sockets: a rogue client whose first frame is an Error full of terminal
// escapes and a forged "dslaunch:" line, a flood of such connections, a
// rogue listener that answers a fetch with the same or with a huge frame,
// and, against a shard server in a child process whose address space is
// capped, a ShardPut announcing 60 GiB, a shard announced but never sent, a
// non-data frame announcing 16 MiB after the ShardPut, and a 16 MiB frame
// before authentication. The server must print the peer's words escaped
// and rarely, reserve nothing the peer announced, stay up, and go on
// serving an honest peer.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/snapshots/peer_link.h"
#include "wire/port_hold.h"
#include "common/log.h"
#include "tests/agent/snapshots/peer_link_fixture.h"
#include "tests/test_util/hostile_peer.h"

namespace ds {
namespace {

using testing::Copy;
using testing::FileOf;
using testing::kSet;
using testing::MapService;
using testing::Soon;

// Terminal escapes (clear screen, set the window title) and a forged line.
const std::string kHostileText = "\x1b[2J\x1b]0;pwned\x07\ndslaunch: all 4 workers exited 0";

// The log lines written while it lives.
class LogCapture {
 public:
  LogCapture() {
    LogSetSink([this](std::string line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::move(line));
    });
  }
  ~LogCapture() { LogSetSink(nullptr); }
  std::vector<std::string> Containing(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& l : lines_)
      if (l.find(text) != std::string::npos) out.push_back(l);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

Bytes ErrorFrame(const std::string& text) {
  return EncodeFrame(wire::MsgType::kError, msg::Error{0, text}.Encode());
}

void SendAll(int fd, const Bytes& b) {
  for (size_t sent = 0; sent < b.size();) {
    REQUIRE(WaitFd(fd, POLLOUT, Soon()).ok());
    ssize_t r = ::send(fd, b.data() + sent, b.size() - sent, MSG_NOSIGNAL);
    REQUIRE(r > 0);
    sent += static_cast<size_t>(r);
  }
}

// Reads until the other side closes (it has finished with us), keeping the
// frames' bytes; bounded by Soon().
Bytes UntilClosed(int fd) {
  Bytes got;
  uint8_t buf[4096];
  while (WaitFd(fd, POLLIN, Soon()).ok()) {
    ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
    if (r <= 0) break;
    got.insert(got.end(), buf, buf + r);
  }
  return got;
}

// The message of the Error frame at the start of `b` ("" if none).
std::string ErrorIn(const Bytes& b) {
  if (b.size() < wire::kHeaderSize) return "";
  auto h = DecodeHeader(b.data());
  if (!h.ok() || h->type != wire::MsgType::kError || b.size() < wire::kHeaderSize + h->length) return "";
  auto e = msg::Error::Decode(Bytes(b.begin() + wire::kHeaderSize, b.begin() + wire::kHeaderSize + h->length));
  return e.ok() ? e->message : "";
}

bool AllPrintable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

TEST_CASE("peer link: an Error sent as the first frame is logged escaped, and a flood of them rarely",
          "[snapshots][hostile]") {
  MapService server;
  server.Serve(PeerIdentity{"job1", "key", 1, "w1"});
  LogCapture log;
  for (int i = 0; i < 8; ++i) {
    auto fd = ConnectTcp(server.addr(), "", Soon());
    REQUIRE(fd.ok());
    SendAll(fd->get(), ErrorFrame(kHostileText));
    UntilClosed(fd->get());  // the server is done with it, its line written
  }
  const auto lines = log.Containing("snapshots: refused a peer connection from 127.0.0.1:");
  INFO(lines.size() << " lines");
  REQUIRE(lines.size() == 4);  // the 1st, 2nd, 4th and 8th
  CHECK_THAT(lines[3], Catch::Contains("(8 refused so far; logged at 1, 2, 4, 8, ...)"));
  for (const std::string& line : lines) {
    REQUIRE(line.back() == '\n');
    CHECK(AllPrintable(line.substr(0, line.size() - 1)));
    CHECK_THAT(line, Catch::Contains("\\x1b[2J\\x1b]0;pwned\\x07\\x0adslaunch: all 4 workers exited 0"));
  }
}

// A listener that answers every connection with `reply` once the client's
// first frame (its Hello) arrived, then holds it until the client closes.
class RogueListener {
 public:
  explicit RogueListener(Bytes reply) : reply_(std::move(reply)) {
    auto held = HoldPort("127.0.0.1", 0);
    REQUIRE(held.ok());
    listen_ = std::move(held->first);
    addr_ = "127.0.0.1:" + std::to_string(held->second);
    thread_ = std::thread([this] {
      if (!WaitFd(listen_.get(), POLLIN, Soon()).ok()) return;
      UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn.get() < 0 || !ReadFrame(conn.get(), Soon()).ok()) return;
      (void)!::send(conn.get(), reply_.data(), reply_.size(), MSG_NOSIGNAL);
      UntilClosed(conn.get());
    });
  }
  ~RogueListener() { thread_.join(); }
  const std::string& addr() const { return addr_; }

 private:
  Bytes reply_;
  UniqueFd listen_;
  std::string addr_;
  std::thread thread_;
};

TEST_CASE("peer link: a rogue listener's Error reaches the fetching agent escaped", "[snapshots][hostile]") {
  RogueListener rogue(ErrorFrame(kHostileText));
  MapService into;
  auto got = FetchShard(rogue.addr(), PeerIdentity{"job1", "key", 0, "w0"}, 5, kSet, 0, into.Opener(), Soon());
  REQUIRE_FALSE(got.ok());
  CHECK(AllPrintable(got.status().message()));
  CHECK_THAT(got.status().message(), Catch::EndsWith("\\x1b[2J\\x1b]0;pwned\\x07\\x0adslaunch: all 4 workers exited 0"));
}

TEST_CASE("peer link: before the server proved the key, a frame announcing 16 MiB is refused unread",
          "[snapshots][hostile]") {
  RogueListener rogue(EncodeFrameHeader(wire::MsgType::kChallenge, wire::kMaxPayload));
  MapService into;
  auto got = FetchShard(rogue.addr(), PeerIdentity{"job1", "key", 0, "w0"}, 5, kSet, 0, into.Opener(), Soon());
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().message() == "fetching shard 0 of step 5 from " + rogue.addr() +
                                      ": handshake: frame of 16777216 bytes exceeds the 4096-byte limit");
}

// A field of /proc/<pid>/status in KiB ("VmHWM:", "VmSize:"); 0 if absent.
uint64_t StatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(field.size()));
  return 0;
}

// Serves a real SnapshotStore (where agents keep shards: /dev/shm).
struct StoreService : ShardService {
  explicit StoreService(SnapshotStore* s) : store(s) {}
  Result<ShardFile> Lookup(int64_t step, const std::string& set, uint32_t shard) override {
    return store->Open(step, set, shard);
  }
  Result<std::unique_ptr<ShardSink>> Receive(const HeldShard& held, const std::string& manifest) override {
    return store->Receive(held, manifest);
  }
  void Received(const HeldShard&) override {}
  void ServerFailed(const std::string& what) override { std::fprintf(stderr, "child server: %s\n", what.c_str()); }
  SnapshotStore* store;
};

// In the child: a shard server whose process may not grow past `as_limit`
// bytes of address space; "<addr> <store dir>" up the pipe, then serves
// until the parent closes `down`.
[[noreturn]] void RunChildServer(const PeerIdentity& me, uint64_t as_limit, int up, int down) {
  const rlimit lim{as_limit, as_limit};
  if (::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(2);
  {
    auto store = SnapshotStore::Create();
    if (!store.ok()) ::_exit(3);
    StoreService service(store->get());
    auto server = PeerServer::Start("127.0.0.1", me, &service, 10.0);
    if (!server.ok()) ::_exit(4);
    (*server)->AllowPeers({"127.0.0.1:1"});
    const std::string line = (*server)->addr() + " " + (*store)->dir() + "\n";
    if (::write(up, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(5);
    char c;
    while (::read(down, &c, 1) != 0) {
    }
  }
  ::_exit(0);
}

// A shard server in a child process whose address space may grow by 2 GiB
// and no more: there, reserving what a peer announced fails (and, uncaught,
// kills the process) instead of succeeding lazily as overcommit allows.
class ChildServer {
 public:
  explicit ChildServer(const PeerIdentity& me) {
    int up[2], down[2];
    REQUIRE(::pipe2(up, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(down, O_CLOEXEC) == 0);
    const uint64_t limit = StatusKiB(::getpid(), "VmSize:") * 1024 + (uint64_t{2} << 30);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(up[0]);
      ::close(down[1]);  // or the parent's close would never end the child
      RunChildServer(me, limit, up[1], down[0]);
    }
    ::close(up[1]);
    ::close(down[0]);
    down_.Reset(down[1]);
    std::string line;
    char c;
    while (WaitFd(up[0], POLLIN, Soon()).ok() && ::read(up[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(up[0]);
    const size_t sp = line.find(' ');
    REQUIRE(sp != std::string::npos);
    addr_ = line.substr(0, sp);
    store_dir_ = line.substr(sp + 1);
  }
  ~ChildServer() { Stop(); }
  const std::string& addr() const { return addr_; }
  const std::string& store_dir() const { return store_dir_; }
  bool Alive() const { return ::waitpid(pid_, nullptr, WNOHANG) == 0; }
  uint64_t PeakRssKiB() const { return StatusKiB(pid_, "VmHWM:"); }
  // Ends the child; its exit status (128+signal if killed).
  int Stop() {
    if (pid_ <= 0) return -1;
    down_.Reset();
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  UniqueFd down_;
  std::string addr_;
  std::string store_dir_;
};

UniqueFd Authenticated(const std::string& addr, const PeerIdentity& me) {
  auto fd = ConnectTcp(addr, "", Soon());
  REQUIRE(fd.ok());
  REQUIRE(ClientHandshake(fd->get(), msg::Hello{wire::Role::kPeer, me.host, me.job_id, me.node}, me.key, Soon()).ok());
  return std::move(fd).value();
}

Bytes ShardPutFrame(int64_t step, uint64_t bytes) {
  return EncodeFrame(wire::MsgType::kShardPut,
                     msg::ShardPut{{step, 0, msg::SnapshotId{"ab", 4, 0, "c0", kSet}, 0, 1, bytes}, 0, "{m}"}.Encode());
}

TEST_CASE("peer link: what a peer announces costs the receiver nothing until it arrives, and it keeps serving",
          "[snapshots][hostile]") {
  const PeerIdentity me{"job1", "key", 1, "w1"}, peer{"job1", "key", 0, "w0"};
  ChildServer child(me);
  testing::TempDir tmp;
  REQUIRE(SendShard(child.addr(), peer, FileOf(tmp, Copy(1, 0, std::string(100000, 'a'))), Soon()).ok());
  const uint64_t peak_before = child.PeakRssKiB();

  {  // A ShardPut announcing 60 GiB: refused for want of room, before any byte.
    UniqueFd fd = Authenticated(child.addr(), peer);
    SendAll(fd.get(), ShardPutFrame(2, uint64_t{60} << 30));
    const std::string error = ErrorIn(UntilClosed(fd.get()));
    CHECK_THAT(error, Catch::StartsWith("w1: shard 0 of step 2: 60.0 GiB announced, more than the "));
    CHECK_THAT(error, Catch::EndsWith(" GiB free for it in " + child.store_dir()));
  }
  {  // 1 MiB announced, 64 KiB sent, then the peer leaves: nothing of it stays.
    UniqueFd fd = Authenticated(child.addr(), peer);
    SendAll(fd.get(), ShardPutFrame(3, 1 << 20));
    Bytes data = EncodeFrameHeader(wire::MsgType::kShardData, (1 << 20) + 4);
    const Bytes len = PayloadWriter().U32(1 << 20).Take();
    data.insert(data.end(), len.begin(), len.end());
    data.resize(data.size() + (64 << 10), 'x');
    SendAll(fd.get(), data);
    ::shutdown(fd.get(), SHUT_WR);
    CHECK(ErrorIn(UntilClosed(fd.get())) == "w1: shard 0 of step 3 (65536 of 1048576 bytes came): connection closed");
    CHECK(std::filesystem::is_empty(child.store_dir() + "/receiving"));
  }
  {  // After the ShardPut, an Error frame announcing 16 MiB, and nothing more.
    UniqueFd fd = Authenticated(child.addr(), peer);
    SendAll(fd.get(), ShardPutFrame(4, 1 << 20));
    SendAll(fd.get(), EncodeFrameHeader(wire::MsgType::kError, wire::kMaxPayload));
    ::shutdown(fd.get(), SHUT_WR);
    CHECK(ErrorIn(UntilClosed(fd.get())) ==
          "w1: shard 0 of step 4 (0 of 1048576 bytes came): shard data: truncated frame (0 of 16777216 payload bytes)");
  }
  {  // Before authentication, a Hello announcing 16 MiB: closed unread.
    auto fd = ConnectTcp(child.addr(), "", Soon());
    REQUIRE(fd.ok());
    SendAll(fd->get(), EncodeFrameHeader(wire::MsgType::kHello, wire::kMaxPayload));
    CHECK(UntilClosed(fd->get()).empty());
  }
  REQUIRE(child.Alive());
  REQUIRE(SendShard(child.addr(), peer, FileOf(tmp, Copy(5, 0, "honest bytes")), Soon()).ok());
  MapService into;
  REQUIRE(FetchShard(child.addr(), peer, 5, kSet, 0, into.Opener(), Soon()).ok());
  CHECK(into.Data(5, 0) == "honest bytes");
  const uint64_t peak_after = child.PeakRssKiB();
  INFO("peak RSS " << peak_before << " KiB before, " << peak_after << " KiB after");
  CHECK(peak_after - peak_before < 8 * 1024);
  CHECK(child.Stop() == 0);
}

// Issue 42 item 2: each agent served 32 connections at once, a silent peer
// held a slot 5 s and refilled it, the backlog filled, and replication
// failed ("sending shard 0 ... handshake: connection closed"). Now only the
// job's nodes get a slot, each source has a few unauthenticated ones (a
// newer one closes the oldest), and a handshake has 1 s. Hostile here: 200
// idle connections from an address that is no node of the job and 40 from
// a node's own address (another user on that node). On the old server the
// replica below timed out after 3 s.
TEST_CASE("peer link: idle unauthenticated connections, from anywhere or from a node's address, do not keep a "
          "replica or a fetch out",
          "[snapshots][hostile]") {
  PeerIdentity a{"job1", "key", 0, "w0", "127.0.0.2"}, b{"job1", "key", 1, "w1"};
  MapService server;
  server.Serve(b, {"127.0.0.2:7000", "127.0.0.1:7001"});
  testing::IdlePeers elsewhere(server.addr(), 200, "127.0.0.3");
  testing::IdlePeers same_node(server.addr(), 40, "127.0.0.2");
  REQUIRE(elsewhere.opened() == 200);
  REQUIRE(same_node.opened() == 40);
  testing::TempDir tmp;
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::seconds(3);
  Status sent = SendShard(server.addr(), a, FileOf(tmp, Copy(9, 0, "replica bytes")), deadline);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(sent.ok());
  INFO("the replica took " << took << " s");
  CHECK(took < 0.5);
  CHECK(server.Data(9, 0) == "replica bytes");
  MapService into;
  REQUIRE(FetchShard(server.addr(), a, 9, kSet, 0, into.Opener(), deadline).ok());
  CHECK(into.Data(9, 0) == "replica bytes");
}

// A connection from an address that is not a node's is never served: it
// waits, holding only its descriptor, kUnknownWait (a node the coordinator
// has just told the other agents about is served meanwhile), then is
// closed unread. On the old server the stranger's replica was taken.
TEST_CASE("peer link: a connection from an unknown address is not served, and closed after a second unless its "
          "address becomes a node's",
          "[snapshots][hostile]") {
  PeerIdentity a{"job1", "key", 0, "w0", "127.0.0.4"}, b{"job1", "key", 1, "w1"};
  MapService server;
  server.Serve(b, {"127.0.0.1:7001"});
  testing::TempDir tmp;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(SendShard(server.addr(), a, FileOf(tmp, Copy(2, 0, "stranger")), t0 + std::chrono::milliseconds(300)).ok());
  CHECK_FALSE(server.Has(2, 0));
  testing::IdlePeers stranger(server.addr(), 3, "127.0.0.5");
  REQUIRE(stranger.opened() == 3);
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(stranger.WaitClosedByPeer(5.0) == 3);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  INFO("closed after " << took << " s");
  CHECK(took < 2.0);
  // The replica's connection may arrive before this or after it: served either way.
  Status sent;
  std::thread replica([&] { sent = SendShard(server.addr(), a, FileOf(tmp, Copy(2, 0, "late")), Soon()); });
  server.server().AllowPeers({"127.0.0.1:7001", "127.0.0.4:7002"});
  replica.join();
  CHECK(sent.ok());
  CHECK(server.Data(2, 0) == "late");
}

}  // namespace
}  // namespace ds
