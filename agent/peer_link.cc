#include "agent/peer_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "agent/port_hold.h"
#include "common/clock.h"
#include "common/log.h"
#include "runtime/checkpoint_format.h"

namespace ds {
namespace {

Deadline After(double seconds) { return std::chrono::steady_clock::now() + Seconds(seconds); }

Result<UniqueFd> Open(const std::string& peer_addr, const PeerIdentity& me, Deadline deadline) {
  DS_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(peer_addr, "", deadline));
  msg::Hello hello{wire::Role::kPeer, me.host, me.job_id, me.node};
  DS_RETURN_IF_ERROR(ClientHandshake(fd.get(), hello, me.key, deadline));
  return fd;
}

// ShardPut then the bytes in chunks.
Status WriteShard(int fd, const ShardCopy& c, Deadline deadline) {
  DS_RETURN_IF_ERROR(WriteFrame(fd, wire::MsgType::kShardPut,
                                msg::ShardPut{c.held.entry, c.held.crc32, c.manifest}.Encode(), deadline));
  for (size_t off = 0; off < c.data.size() || off == 0; off += kShardChunk) {
    const size_t n = std::min(kShardChunk, c.data.size() - off);
    msg::ShardData d;
    d.data.assign(c.data.begin() + static_cast<ptrdiff_t>(off), c.data.begin() + static_cast<ptrdiff_t>(off + n));
    DS_RETURN_IF_ERROR(WriteFrame(fd, wire::MsgType::kShardData, d.Encode(), deadline));
    if (c.data.empty()) break;
  }
  return Status::OK();
}

// The frames WriteShard sent, given the ShardPut already read.
Result<ShardCopy> ReadShard(int fd, const msg::ShardPut& put, Deadline deadline) {
  ShardCopy c;
  c.held.entry = put.entry;
  c.held.crc32 = put.crc32;
  c.manifest = put.manifest;
  if (put.entry.bytes > (uint64_t{1} << 36)) return Status::InvalidArgument("shard larger than 64 GiB");
  c.data.reserve(put.entry.bytes);
  do {
    auto f = ReadFrame(fd, deadline);
    DS_RETURN_IF_ERROR(ExpectFrame(f, wire::MsgType::kShardData, "shard data"));
    DS_ASSIGN_OR_RETURN(msg::ShardData d, msg::ShardData::Decode(f->payload));
    if (c.data.size() + d.data.size() > put.entry.bytes) return Status::InvalidArgument("more shard bytes than announced");
    c.data.append(reinterpret_cast<const char*>(d.data.data()), d.data.size());
  } while (c.data.size() < put.entry.bytes);
  const uint32_t crc = rt::Crc32(c.data);
  if (crc != put.crc32)
    return Status::InvalidArgument(fmt::format("shard {} of step {}: crc32 mismatch ({:08x}, expected {:08x})",
                                               put.entry.shard, put.entry.step, crc, put.crc32));
  return c;
}

Status ReplyOk(int fd, Deadline deadline) { return WriteFrame(fd, wire::MsgType::kStoreOk, msg::StoreOk{}.Encode(), deadline); }
void ReplyError(int fd, const std::string& why, Deadline deadline) {
  (void)WriteFrame(fd, wire::MsgType::kError,
                   msg::Error{static_cast<uint32_t>(wire::ErrorCode::kInvalid), why}.Encode(), deadline);
}

}  // namespace

Status SendShard(const std::string& peer_addr, const PeerIdentity& me, const ShardCopy& copy, Deadline deadline) {
  auto run = [&]() -> Status {
    DS_ASSIGN_OR_RETURN(UniqueFd fd, Open(peer_addr, me, deadline));
    DS_RETURN_IF_ERROR(WriteShard(fd.get(), copy, deadline));
    return ExpectFrame(ReadFrame(fd.get(), deadline), wire::MsgType::kStoreOk, "replica");
  };
  Status st = run();
  return st.ok() ? st : st.Prefixed(fmt::format("sending shard {} of step {} to {}", copy.held.entry.shard,
                                                copy.held.entry.step, peer_addr));
}

Result<ShardCopy> FetchShard(const std::string& peer_addr, const PeerIdentity& me, int64_t step, uint32_t shard,
                             Deadline deadline) {
  auto run = [&]() -> Result<ShardCopy> {
    DS_ASSIGN_OR_RETURN(UniqueFd fd, Open(peer_addr, me, deadline));
    DS_RETURN_IF_ERROR(WriteFrame(fd.get(), wire::MsgType::kShardGet, msg::ShardGet{step, shard}.Encode(), deadline));
    auto f = ReadFrame(fd.get(), deadline);
    DS_RETURN_IF_ERROR(ExpectFrame(f, wire::MsgType::kShardPut, "fetch"));
    DS_ASSIGN_OR_RETURN(msg::ShardPut put, msg::ShardPut::Decode(f->payload));
    if (put.entry.step != step || put.entry.shard != shard) return Status::IOError("the peer sent another shard");
    return ReadShard(fd.get(), put, deadline);
  };
  auto c = run();
  if (!c.ok()) return c.status().Prefixed(fmt::format("fetching shard {} of step {} from {}", shard, step, peer_addr));
  return c;
}

Result<std::unique_ptr<PeerServer>> PeerServer::Start(const std::string& bind_addr, PeerIdentity me, Lookup lookup,
                                                      Receive receive, double request_timeout) {
  std::unique_ptr<PeerServer> s(new PeerServer());
  DS_ASSIGN_OR_RETURN(auto held, HoldPort(bind_addr, 0));
  s->listen_ = std::move(held.first);
  ::listen(s->listen_.get(), 64);
  const std::string host = bind_addr.find(':') != std::string::npos ? "[" + bind_addr + "]" : bind_addr;
  s->addr_ = fmt::format("{}:{}", host, held.second);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  s->wake_[0].Reset(p[0]);
  s->wake_[1].Reset(p[1]);
  s->me_ = std::move(me);
  s->lookup_ = std::move(lookup);
  s->receive_ = std::move(receive);
  s->request_timeout_ = request_timeout;
  s->thread_ = std::thread([raw = s.get()] { raw->Loop(); });
  return s;
}

PeerServer::~PeerServer() {
  if (thread_.joinable()) {
    char c = 0;
    (void)!::write(wake_[1].get(), &c, 1);
    thread_.join();
  }
}

void PeerServer::Loop() {
  for (;;) {
    pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {wake_[0].get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (conn.get() >= 0) Serve(conn.get());
  }
}

void PeerServer::Serve(int fd) {
  // A peer that does not know the key holds the server for 5 s at most.
  auto hello = ServerHandshake(fd, wire::Role::kPeer, me_.job_id, me_.key, std::min(After(5), After(request_timeout_)));
  if (!hello.ok()) {
    DS_LOG(Warn, Agent) << "snapshots: refused a peer connection: " << hello.status().message();
    return;
  }
  const Deadline deadline = After(request_timeout_);
  auto f = ReadFrame(fd, deadline);
  if (!f.ok()) return;
  if (f->type == wire::MsgType::kShardGet) {
    auto get = msg::ShardGet::Decode(f->payload);
    if (!get.ok()) return ReplyError(fd, get.status().message(), deadline);
    auto copy = lookup_(get->step, get->shard);
    if (!copy.ok()) return ReplyError(fd, fmt::format("{}: {}", me_.host, copy.status().message()), deadline);
    (void)WriteShard(fd, *copy, deadline);
  } else if (f->type == wire::MsgType::kShardPut) {
    auto put = msg::ShardPut::Decode(f->payload);
    if (!put.ok()) return ReplyError(fd, put.status().message(), deadline);
    auto copy = ReadShard(fd, *put, deadline);
    Status st = copy.ok() ? receive_(*copy) : copy.status();
    if (!st.ok()) return ReplyError(fd, fmt::format("{}: {}", me_.host, st.message()), deadline);
    (void)ReplyOk(fd, deadline);
  } else {
    ReplyError(fd, "expected ShardGet or ShardPut", deadline);
  }
}

}  // namespace ds
