// Frame encoding and decoding (layout in wire_format.h / wire_format.md), the
// payload writer/reader, and blocking frame I/O on a socket fd with a
// deadline (used by StoreClient and dsagent; the coordinator uses Asio but
// the same DecodeHeader / PayloadReader). Pure functions and value types;
// not thread-safe per object.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "wire/wire_format.h"

namespace ds {

using Bytes = std::vector<uint8_t>;

struct Frame {
  wire::MsgType type = wire::MsgType::kError;
  Bytes payload;
};

struct FrameHeader {
  wire::MsgType type = wire::MsgType::kError;
  uint32_t length = 0;
};

// Header + payload. Checks payload.size() <= kMaxPayload.
Bytes EncodeFrame(wire::MsgType type, const Bytes& payload);
// The 12 header bytes of a frame whose `length` payload bytes the caller
// sends itself (e.g. from a file).
Bytes EncodeFrameHeader(wire::MsgType type, uint32_t length);

// Validates the 12 header bytes at `p`: magic, version and length bound
// (`max_payload`: kMaxPayload, or kMaxHandshakePayload before AuthOk).
// Errors: "bad magic 0x...", "unsupported version N", "frame of N bytes
// exceeds the 16777216-byte limit".
Result<FrameHeader> DecodeHeader(const uint8_t* p, uint32_t max_payload = wire::kMaxPayload);

// Appends payload fields (big-endian; strings as u32 length + bytes).
class PayloadWriter {
 public:
  PayloadWriter& U8(uint8_t v);
  PayloadWriter& U32(uint32_t v);
  PayloadWriter& I32(int32_t v) { return U32(static_cast<uint32_t>(v)); }
  PayloadWriter& I64(int64_t v);
  PayloadWriter& Str(const std::string& s);
  PayloadWriter& Blob(const Bytes& b);
  PayloadWriter& StrList(const std::vector<std::string>& v);
  PayloadWriter& KvList(const KeyValues& v);
  Bytes Take() { return std::move(buf_); }

 private:
  Bytes buf_;
};

// Reads payload fields. After the first short read every getter returns a
// zero value and ok() is false; Finish() also fails on trailing bytes.
class PayloadReader {
 public:
  explicit PayloadReader(const Bytes& b) : data_(b.data()), size_(b.size()) {}
  uint8_t U8();
  uint32_t U32();
  int32_t I32() { return static_cast<int32_t>(U32()); }
  int64_t I64();
  std::string Str();
  Bytes Blob();
  std::vector<std::string> StrList();
  KeyValues KvList();
  bool ok() const { return ok_; }
  // OK when every byte was consumed and nothing was short.
  Status Finish(const char* what) const;

 private:
  bool Take(size_t n, const uint8_t** out);
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
};

using Deadline = std::chrono::steady_clock::time_point;

// Waits until `fd` is ready for `events` (poll). Errors: Timeout, IOError.
Status WaitFd(int fd, short events, Deadline deadline);
// Reads exactly `n` bytes; `got` reports how many arrived before an error.
// Errors: Unavailable("connection closed"), IOError, Timeout.
Status ReadFull(int fd, uint8_t* buf, size_t n, Deadline deadline, size_t* got);

// Writes all of `frame` to `fd` (blocking, honours the deadline). Errors:
// IOError with errno text, Timeout.
Status WriteFrame(int fd, wire::MsgType type, const Bytes& payload, Deadline deadline);
// Reads one whole frame; the payload buffer grows as bytes arrive (a header
// announcing 16 MiB costs nothing until they do). Errors: Unavailable("connection closed") at a frame
// boundary, IOError("truncated frame ...") inside one, header errors
// (frames above `max_payload` among them), Timeout.
Result<Frame> ReadFrame(int fd, Deadline deadline, uint32_t max_payload = wire::kMaxPayload);
// The rest of a frame whose header `h` the caller read and decoded itself
// (e.g. to stream a data frame elsewhere): the payload, grown as it arrives
// like ReadFrame's. Errors as ReadFrame's.
Result<Frame> ReadFrameRest(int fd, const FrameHeader& h, Deadline deadline);

}  // namespace ds
