#include "agent/peer_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
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

// One ShardData frame's bytes appended to `out` (no intermediate buffer);
// an Error frame is its message.
Status ReadDataFrame(int fd, std::string* out, uint64_t room, Deadline deadline) {
  uint8_t hdr[wire::kHeaderSize + 4];
  size_t got = 0;
  DS_RETURN_IF_ERROR(ReadFull(fd, hdr, wire::kHeaderSize, deadline, &got));
  DS_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(hdr));
  if (h.type != wire::MsgType::kShardData) {
    Frame f{h.type, Bytes(h.length)};
    DS_RETURN_IF_ERROR(ReadFull(fd, f.payload.data(), f.payload.size(), deadline, &got));
    return ExpectFrame(f, wire::MsgType::kShardData, "shard data");
  }
  DS_RETURN_IF_ERROR(ReadFull(fd, hdr + wire::kHeaderSize, 4, deadline, &got));
  const uint32_t n = PayloadReader(Bytes(hdr + wire::kHeaderSize, hdr + wire::kHeaderSize + 4)).U32();
  if (h.length != n + 4) return Status::InvalidArgument("malformed shard data frame");
  if (n > room) return Status::InvalidArgument("more shard bytes than announced");
  const size_t at = out->size();
  out->resize(at + n);
  return ReadFull(fd, reinterpret_cast<uint8_t*>(out->data() + at), n, deadline, &got);
}

// The frames WriteShard sent, given the ShardPut already read.
Result<ShardCopy> ReadShard(int fd, const msg::ShardPut& put, Deadline deadline) {
  if (put.entry.bytes > (uint64_t{1} << 36)) return Status::InvalidArgument("shard larger than 64 GiB");
  ShardCopy c{HeldShard{put.entry, put.crc32}, put.manifest, {}};
  c.data.reserve(put.entry.bytes);
  do {
    DS_RETURN_IF_ERROR(ReadDataFrame(fd, &c.data, put.entry.bytes - c.data.size(), deadline));
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

void LowerThreadPriority() {
  const auto tid = static_cast<id_t>(::gettid());
  ::setpriority(PRIO_PROCESS, tid, 10);
  constexpr int kIoprioWhoProcess = 1, kIoprioClassIdle = 3, kIoprioClassShift = 13;  // linux/ioprio.h
  ::syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, kIoprioClassIdle << kIoprioClassShift);
}

Status SendShard(const std::string& peer_addr, const PeerIdentity& me, const ShardFile& file, Deadline deadline) {
  auto run = [&]() -> Status {
    DS_ASSIGN_OR_RETURN(UniqueFd fd, Open(peer_addr, me, deadline));
    DS_RETURN_IF_ERROR(WriteShard(fd.get(), file, deadline));
    return ExpectFrame(ReadFrame(fd.get(), deadline), wire::MsgType::kStoreOk, "replica");
  };
  Status st = run();
  return st.ok() ? st : st.Prefixed(fmt::format("sending shard {} of step {} to {}", file.held.entry.shard,
                                                file.held.entry.step, peer_addr));
}

Result<ShardCopy> FetchShard(const std::string& peer_addr, const PeerIdentity& me, int64_t step,
                             const std::string& set, uint32_t shard, Deadline deadline) {
  auto run = [&]() -> Result<ShardCopy> {
    DS_ASSIGN_OR_RETURN(UniqueFd fd, Open(peer_addr, me, deadline));
    DS_RETURN_IF_ERROR(WriteFrame(fd.get(), wire::MsgType::kShardGet, msg::ShardGet{step, set, shard}.Encode(), deadline));
    auto f = ReadFrame(fd.get(), deadline);
    DS_RETURN_IF_ERROR(ExpectFrame(f, wire::MsgType::kShardPut, "fetch"));
    DS_ASSIGN_OR_RETURN(msg::ShardPut put, msg::ShardPut::Decode(f->payload));
    if (put.entry.step != step || put.entry.id.set != set || put.entry.shard != shard)
      return Status::IOError("the peer sent another shard");
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
  LowerThreadPriority();
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
    auto copy = lookup_(get->step, get->set, get->shard);
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
