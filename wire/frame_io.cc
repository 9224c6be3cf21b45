#include "wire/frame_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/check.h"

namespace ds {
namespace {

constexpr size_t kReadChunk = 64 * 1024;  // payload bytes read (and allocated) per step

void PutBE(Bytes& out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t GetBE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

int MillisLeft(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now()).count();
  if (left <= 0) return 0;
  return left > 1 << 30 ? 1 << 30 : static_cast<int>(left);
}

}  // namespace

Status WaitFd(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, MillisLeft(deadline));
    if (r > 0) return Status::OK();
    if (r == 0) return Status::Timeout("timed out");
    if (errno != EINTR) return Status::IOError(std::strerror(errno));
  }
}

Status ReadFull(int fd, uint8_t* buf, size_t n, Deadline deadline, size_t* got) {
  *got = 0;
  while (*got < n) {
    DS_RETURN_IF_ERROR(WaitFd(fd, POLLIN, deadline));
    ssize_t r = ::recv(fd, buf + *got, n - *got, MSG_DONTWAIT);
    if (r > 0) { *got += static_cast<size_t>(r); continue; }
    if (r == 0) return Status::Unavailable("connection closed");
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    // Reset like closed: the peer (or its overflowing listen queue) is gone, which a caller may retry.
    if (errno == ECONNRESET) return Status::Unavailable(std::strerror(errno));
    return Status::IOError(std::strerror(errno));
  }
  return Status::OK();
}

Bytes EncodeFrameHeader(wire::MsgType type, uint32_t length) {
  DS_CHECK(length <= wire::kMaxPayload);
  Bytes out;
  PutBE(out, wire::kMagic, 4);
  PutBE(out, wire::kVersion, 2);
  PutBE(out, static_cast<uint16_t>(type), 2);
  PutBE(out, length, 4);
  return out;
}

Bytes EncodeFrame(wire::MsgType type, const Bytes& payload) {
  DS_CHECK(payload.size() <= wire::kMaxPayload);
  Bytes out = EncodeFrameHeader(type, static_cast<uint32_t>(payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Result<FrameHeader> DecodeHeader(const uint8_t* p, uint32_t max_payload) {
  uint32_t magic = static_cast<uint32_t>(GetBE(p, 4));
  if (magic != wire::kMagic) return Status::InvalidArgument(fmt::format("bad magic 0x{:08x}", magic));
  uint16_t version = static_cast<uint16_t>(GetBE(p + 4, 2));
  if (version != wire::kVersion)
    return Status::InvalidArgument(fmt::format("unsupported version {} (expected {})", version, wire::kVersion));
  FrameHeader h;
  h.type = static_cast<wire::MsgType>(GetBE(p + 6, 2));
  h.length = static_cast<uint32_t>(GetBE(p + 8, 4));
  if (h.length > max_payload)
    return Status::InvalidArgument(fmt::format("frame of {} bytes exceeds the {}-byte limit", h.length, max_payload));
  return h;
}

PayloadWriter& PayloadWriter::U8(uint8_t v) { buf_.push_back(v); return *this; }
PayloadWriter& PayloadWriter::U32(uint32_t v) { PutBE(buf_, v, 4); return *this; }
PayloadWriter& PayloadWriter::I64(int64_t v) { PutBE(buf_, static_cast<uint64_t>(v), 8); return *this; }
PayloadWriter& PayloadWriter::Str(const std::string& s) {
  U32(static_cast<uint32_t>(s.size()));
  buf_.insert(buf_.end(), s.begin(), s.end());
  return *this;
}
PayloadWriter& PayloadWriter::Blob(const Bytes& b) {
  U32(static_cast<uint32_t>(b.size()));
  buf_.insert(buf_.end(), b.begin(), b.end());
  return *this;
}
PayloadWriter& PayloadWriter::StrList(const std::vector<std::string>& v) {
  U32(static_cast<uint32_t>(v.size()));
  for (const auto& s : v) Str(s);
  return *this;
}
PayloadWriter& PayloadWriter::KvList(const KeyValues& v) {
  U32(static_cast<uint32_t>(v.size()));
  for (const auto& [k, val] : v) Str(k).Str(val);
  return *this;
}

bool PayloadReader::Take(size_t n, const uint8_t** out) {
  if (!ok_ || size_ - pos_ < n) { ok_ = false; return false; }
  *out = data_ + pos_;
  pos_ += n;
  return true;
}
uint8_t PayloadReader::U8() { const uint8_t* p; return Take(1, &p) ? *p : 0; }
uint32_t PayloadReader::U32() { const uint8_t* p; return Take(4, &p) ? static_cast<uint32_t>(GetBE(p, 4)) : 0; }
int64_t PayloadReader::I64() { const uint8_t* p; return Take(8, &p) ? static_cast<int64_t>(GetBE(p, 8)) : 0; }
std::string PayloadReader::Str() {
  uint32_t n = U32();
  const uint8_t* p;
  return Take(n, &p) ? std::string(reinterpret_cast<const char*>(p), n) : std::string();
}
Bytes PayloadReader::Blob() {
  uint32_t n = U32();
  const uint8_t* p;
  return Take(n, &p) ? Bytes(p, p + n) : Bytes();
}
std::vector<std::string> PayloadReader::StrList() {
  uint32_t n = U32();
  std::vector<std::string> out;
  for (uint32_t i = 0; i < n && ok_; ++i) out.push_back(Str());  // a lying count fails at Take
  return out;
}
KeyValues PayloadReader::KvList() {
  uint32_t n = U32();
  KeyValues out;
  for (uint32_t i = 0; i < n && ok_; ++i) {
    std::string k = Str();
    out.emplace_back(std::move(k), Str());
  }
  return out;
}
Status PayloadReader::Finish(const char* what) const {
  if (!ok_) return Status::InvalidArgument(fmt::format("truncated {} payload", what));
  if (pos_ != size_)
    return Status::InvalidArgument(fmt::format("{} payload has {} trailing bytes", what, size_ - pos_));
  return Status::OK();
}

Status WriteFrame(int fd, wire::MsgType type, const Bytes& payload, Deadline deadline) {
  Bytes frame = EncodeFrame(type, payload);
  size_t sent = 0;
  while (sent < frame.size()) {
    DS_RETURN_IF_ERROR(WaitFd(fd, POLLOUT, deadline));
    ssize_t r = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r >= 0) { sent += static_cast<size_t>(r); continue; }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    return Status::IOError(std::strerror(errno));
  }
  return Status::OK();
}

Result<Frame> ReadFrame(int fd, Deadline deadline, uint32_t max_payload) {
  uint8_t hdr[wire::kHeaderSize];
  size_t got = 0;
  Status st = ReadFull(fd, hdr, sizeof(hdr), deadline, &got);
  if (!st.ok()) {
    if (got > 0 && st.code() == Status::Code::kUnavailable)
      return Status::IOError(fmt::format("truncated frame header ({} of {} bytes)", got, sizeof(hdr)));
    return st;
  }
  DS_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(hdr, max_payload));
  return ReadFrameRest(fd, h, deadline);
}

Result<Frame> ReadFrameRest(int fd, const FrameHeader& h, Deadline deadline) {
  Frame f;
  f.type = h.type;
  // Grow by what arrives, at most kReadChunk at a time.
  size_t have = 0;
  while (have < h.length) {
    size_t want = std::min<size_t>(h.length - have, kReadChunk);
    f.payload.resize(have + want);
    size_t got = 0;
    Status st = ReadFull(fd, f.payload.data() + have, want, deadline, &got);
    have += got;
    if (!st.ok()) {
      if (st.code() == Status::Code::kUnavailable)
        return Status::IOError(fmt::format("truncated frame ({} of {} payload bytes)", have, h.length));
      return st;
    }
  }
  return f;
}

}  // namespace ds
