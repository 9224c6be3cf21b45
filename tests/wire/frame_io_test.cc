#include "wire/frame_io.h"

#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "wire/client_conn.h"
#include "wire/protocol.h"

namespace ds {
namespace {

using std::chrono::milliseconds;
Deadline Soon() { return std::chrono::steady_clock::now() + milliseconds(2000); }

TEST_CASE("frame: encode and decode round trip", "[frame]") {
  Bytes payload = msg::Output{3, 5, 2, "a line with \"quotes\" and $HOME"}.Encode();
  Bytes frame = EncodeFrame(wire::MsgType::kOutput, payload);
  REQUIRE(frame.size() == wire::kHeaderSize + payload.size());
  auto h = DecodeHeader(frame.data());
  REQUIRE(h.ok());
  CHECK(h->type == wire::MsgType::kOutput);
  CHECK(h->length == payload.size());
  auto m = msg::Output::Decode(Bytes(frame.begin() + wire::kHeaderSize, frame.end()));
  REQUIRE(m.ok());
  CHECK(m->rank == 5);
  CHECK(m->line == "a line with \"quotes\" and $HOME");
}

TEST_CASE("frame: bad magic, version and oversized length are rejected", "[frame]") {
  Bytes f = EncodeFrame(wire::MsgType::kPing, {});
  Bytes bad = f;
  bad[0] = 'X';
  CHECK(DecodeHeader(bad.data()).status().message() == "bad magic 0x58534c4e");
  bad = f;
  bad[5] = 99;
  CHECK(DecodeHeader(bad.data()).status().message() ==
        "unsupported version 99 (expected " + std::to_string(wire::kVersion) + ")");
  bad = f;
  bad[8] = bad[9] = bad[10] = bad[11] = 0xff;  // 4 GiB
  CHECK(DecodeHeader(bad.data()).status().message() ==
        "frame of 4294967295 bytes exceeds the 16777216-byte limit");
}

TEST_CASE("frame: payloads that are short or too long do not decode", "[frame]") {
  Bytes p = msg::WorkerStarted{1, 2, 3}.Encode();
  Bytes shorter(p.begin(), p.end() - 1);
  CHECK(msg::WorkerStarted::Decode(shorter).status().message() == "truncated WorkerStarted payload");
  Bytes longer = p;
  longer.push_back(0);
  CHECK(msg::WorkerStarted::Decode(longer).status().message() == "WorkerStarted payload has 1 trailing bytes");
  // A list count that lies does not allocate or crash.
  Bytes lying = PayloadWriter().U32(0xffffffff).Take();
  PayloadReader r(lying);
  r.StrList();
  CHECK(!r.ok());
}

TEST_CASE("frame: blocking read/write over a socket pair, truncation detected", "[frame]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  UniqueFd a(sv[0]), b(sv[1]);
  REQUIRE(WriteFrame(a.get(), wire::MsgType::kStop, msg::Stop{4}.Encode(), Soon()).ok());
  auto f = ReadFrame(b.get(), Soon());
  REQUIRE(f.ok());
  CHECK(f->type == wire::MsgType::kStop);
  CHECK(msg::Stop::Decode(f->payload)->generation == 4);

  Bytes whole = EncodeFrame(wire::MsgType::kStop, msg::Stop{4}.Encode());
  REQUIRE(::write(a.get(), whole.data(), whole.size() - 2) > 0);
  a.Reset();
  auto t = ReadFrame(b.get(), Soon());
  CHECK(t.status().message() == "truncated frame (2 of 4 payload bytes)");
}

TEST_CASE("frame: before authentication a header may announce at most 512 bytes; the largest Hello fits",
          "[frame]") {
  msg::Hello h;
  h.name = std::string(253, 'h');    // the longest DNS host name
  h.job_id = std::string(246, 'j');  // what the limit leaves for the job id
  Bytes f = EncodeFrame(wire::MsgType::kHello, h.Encode());
  CHECK(f.size() - wire::kHeaderSize == wire::kMaxHandshakePayload);
  CHECK(DecodeHeader(f.data(), wire::kMaxHandshakePayload).ok());
  h.job_id += 'j';
  f = EncodeFrame(wire::MsgType::kHello, h.Encode());
  CHECK(DecodeHeader(f.data(), wire::kMaxHandshakePayload).status().message() ==
        "frame of 513 bytes exceeds the 512-byte limit");
  CHECK(DecodeHeader(f.data()).ok());  // after authentication: kMaxPayload
}

TEST_CASE("frame: a payload larger than one read chunk arrives whole; truncation counts every byte", "[frame]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  UniqueFd a(sv[0]), b(sv[1]);
  Bytes big(300 * 1024);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  std::thread writer([&] { CHECK(WriteFrame(a.get(), wire::MsgType::kOutput, big, Soon()).ok()); });
  auto f = ReadFrame(b.get(), Soon());
  writer.join();
  REQUIRE(f.ok());
  CHECK(f->payload == big);

  Bytes whole = EncodeFrame(wire::MsgType::kOutput, big);
  std::thread partial([&] {
    size_t n = wire::kHeaderSize + 100000;
    CHECK(::send(a.get(), whole.data(), n, MSG_NOSIGNAL) == static_cast<ssize_t>(n));
    a.Reset();
  });
  auto t = ReadFrame(b.get(), Soon());
  partial.join();
  CHECK(t.status().message() == "truncated frame (100000 of 307200 payload bytes)");
}

TEST_CASE("frame: read times out when nothing arrives", "[frame]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  UniqueFd a(sv[0]), b(sv[1]);
  auto f = ReadFrame(b.get(), std::chrono::steady_clock::now() + milliseconds(20));
  CHECK(f.status().code() == Status::Code::kTimeout);
}

}  // namespace
}  // namespace ds
