#include "common/frame_io.h"

#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "common/client_conn.h"
#include "common/protocol.h"

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
  bad[5] = 9;
  CHECK(DecodeHeader(bad.data()).status().message() == "unsupported version 9 (expected 1)");
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

TEST_CASE("frame: read times out when nothing arrives", "[frame]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  UniqueFd a(sv[0]), b(sv[1]);
  auto f = ReadFrame(b.get(), std::chrono::steady_clock::now() + milliseconds(20));
  CHECK(f.status().code() == Status::Code::kTimeout);
}

}  // namespace
}  // namespace ds
