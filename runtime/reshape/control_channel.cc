#include "runtime/reshape/control_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "common/log.h"
#include "wire/frame_io.h"

namespace ds::rt {
namespace {

// The largest packet the reader takes: a WorkerReshape is a few dozen bytes.
constexpr size_t kMaxPacket = 64 * 1024;

Status CheckSeqPacket(int fd, const std::string& origin) {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0)
    return Status::InvalidArgument(fmt::format("{}: not an open file descriptor", origin));
  int type = 0;
  socklen_t len = sizeof(type);
  if (!S_ISSOCK(st.st_mode) || ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
    return Status::InvalidArgument(fmt::format(
        "{}: expected one end of a SOCK_SEQPACKET socket pair (dsagent's control channel), got another kind of "
        "file", origin));
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<ControlChannel>> ControlChannel::Open(int fd, const std::string& origin) {
  DS_RETURN_IF_ERROR(CheckSeqPacket(fd, origin));
  (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0)
    return Status::IOError(fmt::format("{}: pipe: {}", origin, std::strerror(errno)));
  return std::unique_ptr<ControlChannel>(new ControlChannel(fd, wake[0], wake[1], origin));
}

ControlChannel::ControlChannel(int fd, int wake_read, int wake_write, std::string origin)
    : fd_(fd), wake_read_(wake_read), wake_write_(wake_write), origin_(std::move(origin)),
      reader_([this] { ReadLoop(); }) {}

ControlChannel::~ControlChannel() {
  const char x = 0;
  while (::write(wake_write_, &x, 1) < 0 && errno == EINTR) {
  }
  reader_.join();
  ::close(wake_read_);
  ::close(wake_write_);
  ::close(fd_);
}

void ControlChannel::Watch(Communicator* comm) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.insert(comm);
  if (pending_) comm->Abort();
}

void ControlChannel::Unwatch(Communicator* comm) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.erase(comm);
}

std::optional<ReshapeRequest> ControlChannel::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  requested_ = false;
  return std::exchange(pending_, std::nullopt);
}

bool ControlChannel::WaitForRequest(std::chrono::steady_clock::time_point deadline,
                                    const std::function<bool()>& also) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return pending_.has_value() || closed_ || (also && also()); };
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    cv_.wait(lock, ready);
  } else {
    cv_.wait_until(lock, deadline, ready);
  }
  return pending_.has_value();
}

void ControlChannel::Wake() {
  std::lock_guard<std::mutex> lock(mu_);  // a waiter between its check and its sleep sees the change
  cv_.notify_all();
}

Status ControlChannel::Answer(const msg::WorkerReshaped& answer) {
  const Bytes frame = EncodeFrame(wire::MsgType::kWorkerReshaped, answer.Encode());
  std::lock_guard<std::mutex> lock(send_mu_);
  ssize_t n;
  do {
    n = ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(frame.size()))
    return Status::IOError(fmt::format("{}: cannot answer the agent: {}", origin_,
                                       n < 0 ? std::strerror(errno) : "short write"));
  return Status::OK();
}

void ControlChannel::ReadLoop() {
  std::vector<uint8_t> buf(kMaxPacket);
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      DS_LOG(Warn, Comm) << origin_ << ": poll: " << std::strerror(errno) << "; no more reshapes";
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      cv_.notify_all();
      return;
    }
    if (p[1].revents != 0) return;  // the destructor
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_TRUNC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {  // end of file: the agent is gone, and its death ends us too
      DS_LOG(Info, Comm) << origin_ << ": the agent closed the control channel";
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      cv_.notify_all();
      return;
    }
    if (static_cast<size_t>(n) > buf.size()) {
      DS_LOG(Warn, Comm) << origin_ << ": skipped a packet of " << n << " bytes (at most " << buf.size() << ")";
      continue;
    }
    OnPacket(buf.data(), static_cast<size_t>(n));
  }
}

void ControlChannel::OnPacket(const uint8_t* data, size_t n) {
  Result<FrameHeader> h = Status::InvalidArgument(fmt::format("a packet of {} bytes is no frame", n));
  if (n >= wire::kHeaderSize) h = DecodeHeader(data);
  if (h.ok() && h->length != n - wire::kHeaderSize)
    h = Status::InvalidArgument(fmt::format("header says {} payload bytes, the packet has {}", h->length,
                                            n - wire::kHeaderSize));
  if (!h.ok()) {
    DS_LOG(Warn, Comm) << origin_ << ": skipped a frame: " << h.status().message();
    return;
  }
  if (h->type != wire::MsgType::kWorkerReshape) {
    DS_LOG(Warn, Comm) << origin_ << ": skipped a frame of type " << static_cast<int>(h->type);
    return;
  }
  auto reshape = msg::WorkerReshape::Decode(Bytes(data + wire::kHeaderSize, data + n));
  if (!reshape.ok()) {
    DS_LOG(Warn, Comm) << origin_ << ": skipped a WorkerReshape: " << reshape.status().message();
    return;
  }
  const auto received = std::chrono::steady_clock::now();
  DS_LOG(Info, Comm) << "reshape to generation " << reshape->generation << ": rank " << reshape->rank << " of "
                     << reshape->world << " from step " << reshape->step;
  std::unique_lock<std::mutex> lock(mu_);
  bool aborted = true;
  for (Communicator* c : watched_) aborted = c->Abort() && aborted;
  if (!aborted) {  // a backend that cannot abort (NCCL here): the launcher restarts us instead
    lock.unlock();
    Status st = Answer(msg::WorkerReshaped{reshape->generation, 0,
                                           "this worker's communicator cannot abort a collective in flight "
                                           "(trainer.backend nccl): no in-place reshape", 0});
    if (!st.ok()) DS_LOG(Warn, Comm) << st.message();
    return;
  }
  pending_ = ReshapeRequest{std::move(reshape).value(), received};
  requested_ = true;
  cv_.notify_all();
}

}  // namespace ds::rt
