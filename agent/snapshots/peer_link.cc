#include "agent/snapshots/peer_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zlib.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <exception>
#include <iterator>

#include <fmt/format.h>

#include "wire/port_hold.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strings.h"

namespace ds {
namespace {

// Shard bytes are read this much at a time (the most a peer's announcement
// makes the receiver allocate), then handed to the sink.
constexpr size_t kReceiveStep = 256 * 1024;

Deadline After(double seconds) { return std::chrono::steady_clock::now() + Seconds(seconds); }

Result<UniqueFd> Open(const std::string& peer_addr, const PeerIdentity& me, Deadline deadline,
                      SocketCancel* cancel = nullptr) {
  DS_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(peer_addr, me.source, deadline, cancel));
  SocketCancelScope cancellable(cancel, fd.get());
  msg::Hello hello{wire::Role::kPeer, me.host, me.job_id, me.node};
  DS_RETURN_IF_ERROR(ClientHandshake(fd.get(), hello, me.key, deadline));
  return fd;
}

// One ShardData frame (payload: u32 length + bytes) of `n` bytes of `file_fd`
// at `offset`, the bytes sent by the kernel.
Status WriteDataFrame(int fd, int file_fd, uint64_t offset, uint32_t n, Deadline deadline) {
  Bytes head = EncodeFrameHeader(wire::MsgType::kShardData, n + 4);
  const Bytes len = PayloadWriter().U32(n).Take();
  head.insert(head.end(), len.begin(), len.end());
  for (size_t sent = 0; sent < head.size();) {
    DS_RETURN_IF_ERROR(WaitFd(fd, POLLOUT, deadline));
    ssize_t r = ::send(fd, head.data() + sent, head.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return Status::IOError(std::strerror(errno));
    sent += static_cast<size_t>(r);
  }
  auto off = static_cast<off_t>(offset);
  const auto end = static_cast<off_t>(offset + n);
  while (off < end) {
    DS_RETURN_IF_ERROR(WaitFd(fd, POLLOUT, deadline));
    ssize_t r = ::sendfile(fd, file_fd, &off, static_cast<size_t>(end - off));
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return Status::IOError(std::string("sendfile: ") + std::strerror(errno));
    if (r == 0) return Status::IOError("the shard file ended early");
  }
  return Status::OK();
}

// ShardPut then the bytes in chunks.
Status WriteShard(int fd, const ShardFile& f, Deadline deadline) {
  DS_RETURN_IF_ERROR(WriteFrame(fd, wire::MsgType::kShardPut,
                                msg::ShardPut{f.held.entry, f.held.crc32, f.manifest}.Encode(), deadline));
  uint64_t off = 0;
  do {
    const auto n = static_cast<uint32_t>(std::min<uint64_t>(kShardChunk, f.held.entry.bytes - off));
    DS_RETURN_IF_ERROR(WriteDataFrame(fd, f.fd.get(), off, n, deadline));
    off += n;
  } while (off < f.held.entry.bytes);
  return Status::OK();
}

// A shard being read: its bytes go to `sink` as they arrive, counted and
// checksummed on the way.
struct Incoming {
  ShardSink* sink;
  uint64_t announced;
  uint64_t got = 0;
  uLong crc = crc32(0L, Z_NULL, 0);
  Bytes buf;  // one step: kReceiveStep at most
};

// One ShardData frame's bytes into `in`; an Error frame is its message, and
// any other frame is read (as it arrives) only to be refused.
Status ReadDataFrame(int fd, Incoming& in, Deadline deadline) {
  uint8_t hdr[wire::kHeaderSize];
  size_t got = 0;
  DS_RETURN_IF_ERROR(ReadFull(fd, hdr, sizeof(hdr), deadline, &got));
  DS_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(hdr));
  if (h.type != wire::MsgType::kShardData)
    return ExpectFrame(ReadFrameRest(fd, h, deadline), wire::MsgType::kShardData, "shard data");
  uint8_t len[4];
  DS_RETURN_IF_ERROR(ReadFull(fd, len, sizeof(len), deadline, &got));
  const uint32_t n = PayloadReader(Bytes(len, len + sizeof(len))).U32();
  if (uint64_t{n} + 4 != h.length) return Status::InvalidArgument("malformed shard data frame");
  if (n > in.announced - in.got) return Status::InvalidArgument("more shard bytes than announced");
  for (uint32_t left = n; left > 0;) {
    const size_t step = std::min<size_t>(left, kReceiveStep);
    if (in.buf.size() < step) in.buf.resize(step);
    const Status st = ReadFull(fd, in.buf.data(), step, deadline, &got);
    in.got += got;  // counted even when the rest does not come: the error says how far it got
    if (!st.ok()) return st;
    in.crc = crc32(in.crc, in.buf.data(), static_cast<uInt>(step));
    DS_RETURN_IF_ERROR(in.sink->Write(in.buf.data(), step));
    left -= static_cast<uint32_t>(step);
  }
  return Status::OK();
}

// The frames WriteShard sent, given the ShardPut already read, into the sink
// `open` gives for it; committed once all arrived and the crc32 matched.
Result<HeldShard> ReadShard(int fd, const msg::ShardPut& put, const OpenSink& open, Deadline deadline) {
  const HeldShard held{put.entry, put.crc32};
  DS_ASSIGN_OR_RETURN(std::unique_ptr<ShardSink> sink, open(held, put.manifest));
  Incoming in{sink.get(), put.entry.bytes};
  do {
    if (Status st = ReadDataFrame(fd, in, deadline); !st.ok())
      return st.Prefixed(fmt::format("shard {} of step {} ({} of {} bytes came)", put.entry.shard, put.entry.step,
                                     in.got, in.announced));
  } while (in.got < in.announced);
  if (in.crc != put.crc32)
    return Status::InvalidArgument(fmt::format("shard {} of step {}: crc32 mismatch ({:08x}, expected {:08x})",
                                               put.entry.shard, put.entry.step, in.crc, put.crc32));
  DS_RETURN_IF_ERROR(sink->Commit());
  return held;
}

// A connected peer's numeric address without its port (an IPv4 address
// mapped into IPv6 as IPv4), and "host:port" of it.
struct PeerAddress {
  std::string source, name;
};
PeerAddress AddressOf(const sockaddr_storage& sa, socklen_t len) {
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&sa), len, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {"?", "?"};
  std::string h = host;
  if (StartsWith(h, "::ffff:") && h.find('.') != std::string::npos) h = h.substr(7);
  return {h, h.find(':') != std::string::npos ? fmt::format("[{}]:{}", h, port) : fmt::format("{}:{}", h, port)};
}

Status ReplyOk(int fd, Deadline deadline) { return WriteFrame(fd, wire::MsgType::kStoreOk, msg::StoreOk{}.Encode(), deadline); }
void ReplyError(int fd, const std::string& why, Deadline deadline) {
  (void)WriteFrame(fd, wire::MsgType::kError,
                   msg::Error{static_cast<uint32_t>(wire::ErrorCode::kInvalid), why}.Encode(), deadline);
}

}  // namespace

void LowerThreadPriority() {
  const auto tid = static_cast<id_t>(::gettid());
  ::setpriority(PRIO_PROCESS, tid, 10);
  constexpr int kIoprioWhoProcess = 1, kIoprioClassIdle = 3, kIoprioClassShift = 13;  // linux/ioprio.h
  ::syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, kIoprioClassIdle << kIoprioClassShift);
}

Status SendShard(const std::string& peer_addr, const PeerIdentity& me, const ShardFile& file, Deadline deadline,
                 SocketCancel* cancel) {
  auto run = [&]() -> Status {
    DS_ASSIGN_OR_RETURN(UniqueFd fd, Open(peer_addr, me, deadline, cancel));
    SocketCancelScope cancellable(cancel, fd.get());
    DS_RETURN_IF_ERROR(WriteShard(fd.get(), file, deadline));
    return ExpectFrame(ReadFrame(fd.get(), deadline), wire::MsgType::kStoreOk, "replica");
  };
  Status st = run();
  return st.ok() ? st : st.Prefixed(fmt::format("sending shard {} of step {} to {}", file.held.entry.shard,
                                                file.held.entry.step, peer_addr));
}

Result<HeldShard> FetchShard(const std::string& peer_addr, const PeerIdentity& me, int64_t step,
                             const std::string& set, uint32_t shard, const OpenSink& open, Deadline deadline) {
  auto run = [&]() -> Result<HeldShard> {
    DS_ASSIGN_OR_RETURN(UniqueFd fd, Open(peer_addr, me, deadline));
    DS_RETURN_IF_ERROR(WriteFrame(fd.get(), wire::MsgType::kShardGet, msg::ShardGet{step, set, shard}.Encode(), deadline));
    auto f = ReadFrame(fd.get(), deadline);
    DS_RETURN_IF_ERROR(ExpectFrame(f, wire::MsgType::kShardPut, "fetch"));
    DS_ASSIGN_OR_RETURN(msg::ShardPut put, msg::ShardPut::Decode(f->payload));
    if (put.entry.step != step || put.entry.id.set != set || put.entry.shard != shard)
      return Status::IOError("the peer sent another shard");
    return ReadShard(fd.get(), put, open, deadline);
  };
  auto held = run();
  if (!held.ok())
    return held.status().Prefixed(fmt::format("fetching shard {} of step {} from {}", shard, step, peer_addr));
  return held;
}

Result<std::unique_ptr<PeerServer>> PeerServer::Start(const std::string& bind_addr, PeerIdentity me,
                                                      ShardService* service, double request_timeout) {
  std::unique_ptr<PeerServer> s(new PeerServer());
  DS_ASSIGN_OR_RETURN(auto held, HoldPort(bind_addr, 0));
  s->listen_ = std::move(held.first);
  ::listen(s->listen_.get(), 256);
  const std::string host = bind_addr.find(':') != std::string::npos ? "[" + bind_addr + "]" : bind_addr;
  s->addr_ = fmt::format("{}:{}", host, held.second);
  for (UniqueFd* pipe : {s->wake_, s->freed_}) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
    pipe[0].Reset(p[0]);
    pipe[1].Reset(p[1]);
  }
  s->me_ = std::move(me);
  s->service_ = service;
  s->request_timeout_ = request_timeout;
  s->thread_ = std::thread([raw = s.get()] { raw->Loop(); });
  return s;
}

void PeerServer::AllowPeers(const std::vector<std::string>& peer_addrs) {
  std::vector<std::string> hosts;
  for (const std::string& a : peer_addrs)
    if (auto hp = SplitHostPort(a); hp.ok()) hosts.push_back(hp->first);
  {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_ = std::move(hosts);
    told_ = true;
  }
  char one = 1;
  (void)!::write(freed_[1].get(), &one, 1);  // the loop admits what waited for this
}

bool PeerServer::Allowed(const std::string& source) {
  std::lock_guard<std::mutex> lock(mu_);
  return !told_ || std::find(allowed_.begin(), allowed_.end(), source) != allowed_.end();
}

PeerServer::~PeerServer() {
  if (thread_.joinable()) {
    char c = 0;
    (void)!::write(wake_[1].get(), &c, 1);
    thread_.join();
  }
}

// The loop's thread: accepts whatever is offered, starts the job's nodes'
// connections while fewer than kMaxConnections are served (the rest wait,
// see the header), reaps the connections that ended, and on the
// destructor's (or a failure's) word shuts down those left and joins them.
// Its boundary: an exception (say, std::bad_alloc) ends the server and is
// reported to its service, which fails the node cleanly.
void PeerServer::Loop() {
  Guarded([this] {
    for (;;) {
      Admit();
      int timeout_ms = -1;  // until the next waiting connection's time is up
      for (const Waiting& w : waiting_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(w.until - std::chrono::steady_clock::now());
        const int ms = static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 60000));
        if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = ms;
      }
      pollfd fds[3] = {{wake_[0].get(), POLLIN, 0}, {freed_[0].get(), POLLIN, 0}, {listen_.get(), POLLIN, 0}};
      if (::poll(fds, 3, timeout_ms) < 0 && errno != EINTR) return;
      if (fds[0].revents) return;
      if (fds[1].revents) {
        char buf[64];
        while (::read(freed_[0].get(), buf, sizeof(buf)) > 0) {
        }
      }
      if (fds[2].revents & POLLIN) Accept();
    }
  });
  StopConns();
}

// A server thread's body at low priority, and its boundary.
void PeerServer::Guarded(const std::function<void()>& body) {
  try {
    LowerThreadPriority();
    body();
  } catch (const std::exception& e) {
    Failed(fmt::format("the shard server on {} stopped: {}", addr_, e.what()));
  } catch (...) {
    Failed(fmt::format("the shard server on {} stopped: an unknown exception", addr_));
  }
}

// Every connection offered is taken off the backlog at once: one from a
// node of the job is served (or waits for room), any other waits for its
// address to become a node's, holding its descriptor only.
void PeerServer::Accept() {
  for (int i = 0; i < 64; ++i) {  // a burst, then the loop's other work
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    UniqueFd fd(::accept4(listen_.get(), reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.get() < 0) return;
    PeerAddress a = AddressOf(sa, len);
    MakeRoom(a.source);
    const double wait = Allowed(a.source) ? request_timeout_ : kUnknownWait;
    waiting_.push_back({std::move(fd), std::move(a.source), std::move(a.name), After(wait)});
  }
}

// Before one more connection from `source` waits: when it has
// kMaxPendingPerSource not yet authenticated, the oldest goes (one in its
// handshake, whose socket is shut down, else the oldest waiting); the
// oldest waiting one goes when kMaxWaiting wait.
void PeerServer::MakeRoom(const std::string& source) {
  size_t pending = 0;
  auto oldest_waiting = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if (it->source == source && pending++ == 0) oldest_waiting = it;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Conn* oldest = nullptr;  // conns_ is in start order
    for (Conn& c : conns_) {
      if (c.source != source || c.authed || c.cut || c.done) continue;
      if (!oldest) oldest = &c;
      ++pending;
    }
    if (pending >= kMaxPendingPerSource && oldest) {
      ::shutdown(oldest->fd.get(), SHUT_RDWR);
      oldest->cut = true;
    } else if (pending >= kMaxPendingPerSource) {
      waiting_.erase(oldest_waiting);
    }
  }
  if (waiting_.size() >= kMaxWaiting) waiting_.pop_front();
}

// The waiting connections of the job's nodes start while there is room;
// those past their time are closed.
void PeerServer::Admit() {
  const auto now = std::chrono::steady_clock::now();
  size_t served = Reap();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto next = std::next(it);
    if (served < kMaxConnections && Allowed(it->source)) {
      Start(std::move(it->fd), std::move(it->source), std::move(it->peer));
      ++served;
      waiting_.erase(it);
    } else if (it->until <= now) {
      waiting_.erase(it);
    }
    it = next;
  }
}

void PeerServer::Start(UniqueFd fd, std::string source, std::string peer) {
  std::lock_guard<std::mutex> lock(mu_);
  Conn& c = conns_.emplace_back();
  c.fd = std::move(fd);
  c.source = std::move(source);
  c.thread = std::thread([this, conn = &c, peer = std::move(peer)] { ServeConn(conn, peer); });
}

// A connection's thread.
void PeerServer::ServeConn(Conn* c, const std::string& peer) {
  Guarded([&] { Serve(c, peer); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    c->done = true;
  }
  char one = 1;
  (void)!::write(freed_[1].get(), &one, 1);
}

size_t PeerServer::Reap() {
  std::list<Conn> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = conns_.begin(); it != conns_.end();) {
      auto next = std::next(it);
      if (it->done) ended.splice(ended.end(), conns_, it);
      it = next;
    }
  }
  for (Conn& c : ended) c.thread.join();  // each has ended or is about to: it set done last
  std::lock_guard<std::mutex> lock(mu_);
  return conns_.size();
}

// Every blocking call of a connection's thread is on its socket: a shutdown
// ends them at once. The sockets close after the threads are joined.
void PeerServer::StopConns() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Conn& c : conns_)
      if (!c.done) ::shutdown(c.fd.get(), SHUT_RDWR);
  }
  for (Conn& c : conns_) c.thread.join();
  conns_.clear();
}

void PeerServer::Failed(const std::string& what) {
  if (failed_.exchange(true)) return;
  service_->ServerFailed(what);
  char c = 0;
  (void)!::write(wake_[1].get(), &c, 1);  // the server stops
}

// The 1st, 2nd, 4th, 8th ... refusal is logged: a flood of connections
// costs log2(n) lines. The reason may quote the peer: escaped.
void PeerServer::Refused(const std::string& peer, const Status& why) {
  const uint64_t n = ++refused_;
  if ((n & (n - 1)) != 0) return;
  DS_LOG(Warn, Agent) << fmt::format("snapshots: refused a peer connection from {}: {} ({} refused so far; logged "
                                     "at 1, 2, 4, 8, ...)",
                                     peer, Printable(why.message()), n);
}

void PeerServer::Serve(Conn* c, const std::string& peer) {
  // A peer that does not know the key holds its connection for
  // kHandshakeBudget at most, and costs it 512 bytes a frame
  // (ServerHandshake's budget).
  const int fd = c->fd.get();
  auto hello = ServerHandshake(fd, wire::Role::kPeer, me_.job_id, me_.key,
                               std::min(After(kHandshakeBudget), After(request_timeout_)));
  if (!hello.ok()) return Refused(peer, hello.status());
  {
    std::lock_guard<std::mutex> lock(mu_);
    c->authed = true;
  }
  const Deadline deadline = After(request_timeout_);
  auto f = ReadFrame(fd, deadline);
  if (!f.ok()) return;
  if (f->type == wire::MsgType::kShardGet) {
    auto get = msg::ShardGet::Decode(f->payload);
    if (!get.ok()) return ReplyError(fd, get.status().message(), deadline);
    auto file = service_->Lookup(get->step, get->set, get->shard);
    if (!file.ok()) return ReplyError(fd, fmt::format("{}: {}", me_.host, file.status().message()), deadline);
    (void)WriteShard(fd, *file, deadline);
  } else if (f->type == wire::MsgType::kShardPut) {
    auto put = msg::ShardPut::Decode(f->payload);
    if (!put.ok()) return ReplyError(fd, put.status().message(), deadline);
    auto open = [this](const HeldShard& h, const std::string& manifest) { return service_->Receive(h, manifest); };
    auto held = ReadShard(fd, *put, open, deadline);
    if (!held.ok()) return ReplyError(fd, fmt::format("{}: {}", me_.host, held.status().message()), deadline);
    service_->Received(*held);
    (void)ReplyOk(fd, deadline);
  } else {
    ReplyError(fd, "expected ShardGet or ShardPut", deadline);
  }
}

}  // namespace ds
