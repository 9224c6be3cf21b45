// agent/relay/relay_link: one relayed connection without sockets: bytes wait for
// the upstream, a full buffer stops reading (back-pressure), the source's EOF
// becomes the sink's shutdown once drained, and when the link is over.
#include "agent/relay/relay_link.h"

#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

namespace ds {
namespace {

using TimePoint = RelayLink::TimePoint;
const TimePoint kT0{};
const TimePoint kDeadline = kT0 + std::chrono::seconds(10);

// Reads `text` from the direction's source: as much as fits; how much did.
size_t Feed(RelayDirection& d, const std::string& text) {
  size_t done = 0;
  while (done < text.size() && d.WantsRead()) {
    std::span<uint8_t> space = d.ReadSpace();
    size_t n = std::min(space.size(), text.size() - done);
    std::copy_n(text.data() + done, n, space.data());
    d.Filled(n);
    done += n;
  }
  return done;
}

// Writes up to `max` pending bytes to the sink: what was written.
std::string Drain(RelayDirection& d, size_t max = SIZE_MAX) {
  std::span<const uint8_t> p = d.Pending();
  std::string out(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(std::min(max, p.size())));
  d.Written(out.size());
  return out;
}

TEST_CASE("relay link: a client's bytes wait for the upstream and go once it is connected", "[relay]") {
  RelayLink l(64, kDeadline);
  CHECK(l.ClientEvents() == POLLIN);
  CHECK(l.UpstreamEvents() == POLLOUT);  // the connect in flight
  CHECK(Feed(l.up(), "get key") == 7);
  CHECK(l.up().WantsWrite());
  CHECK_FALSE(l.finished());
  l.Connected();
  CHECK(l.UpstreamEvents() == (POLLIN | POLLOUT));
  CHECK(Drain(l.up()) == "get key");
  CHECK(l.UpstreamEvents() == POLLIN);
  CHECK(Feed(l.down(), "value") == 5);
  CHECK(l.ClientEvents() == (POLLIN | POLLOUT));
  CHECK(Drain(l.down()) == "value");
}

TEST_CASE("relay link: a full buffer is not read until the sink takes some, in order", "[relay]") {
  RelayDirection d(8);
  CHECK(Feed(d, "0123456789") == 8);  // two bytes wait in the sender
  CHECK_FALSE(d.WantsRead());
  CHECK(Drain(d, 3) == "012");
  CHECK(d.WantsRead());
  CHECK(Feed(d, "89ab") == 3);  // the pending bytes moved to the front to make room
  CHECK(Drain(d) == "3456789a");
  CHECK(d.buffered() == 0);
}

TEST_CASE("relay link: the client's half-close reaches the store after its bytes; the answer still comes back",
          "[relay]") {
  RelayLink l(64, kDeadline);
  l.Connected();
  Feed(l.up(), "set k v");
  l.up().SourceEnded();
  CHECK_FALSE(l.up().ShutSinkNow());  // bytes first
  CHECK(Drain(l.up()) == "set k v");
  CHECK(l.up().ShutSinkNow());
  l.up().SinkShut();
  CHECK(l.up().finished());
  CHECK_FALSE(l.finished());          // the other way is open
  CHECK(l.ClientEvents() == 0);       // nothing more to read from the client
  Feed(l.down(), "ok");
  l.down().SourceEnded();
  CHECK(Drain(l.down()) == "ok");
  CHECK(l.down().ShutSinkNow());
  l.down().SinkShut();
  CHECK(l.finished());
}

TEST_CASE("relay link: a client that leaves before the store listens ends the link unless it said something",
          "[relay]") {
  RelayLink quiet(64, kDeadline);
  quiet.up().SourceEnded();
  CHECK(quiet.finished());
  RelayLink talker(64, kDeadline);
  Feed(talker.up(), "add n 1");
  talker.up().SourceEnded();
  CHECK_FALSE(talker.finished());  // delivered once the store listens
}

TEST_CASE("relay link: waiting past the deadline fails the link; a connected one never expires", "[relay]") {
  RelayLink l(64, kDeadline);
  CHECK_FALSE(l.Expire(kDeadline - std::chrono::milliseconds(1)));
  CHECK(l.Expire(kDeadline));
  CHECK(l.finished());
  CHECK(l.failure() == "rank 0's store did not listen in time");
  RelayLink c(64, kDeadline);
  c.Connected();
  CHECK_FALSE(c.Expire(kDeadline + std::chrono::hours(1)));
  CHECK_FALSE(c.finished());
}

TEST_CASE("relay link: an error on either socket ends it, the first reason kept", "[relay]") {
  RelayLink l(64, kDeadline);
  l.Connected();
  l.Fail("read from the client: Connection reset by peer");
  l.Fail("write to the store: Broken pipe");
  CHECK(l.finished());
  CHECK(l.failure() == "read from the client: Connection reset by peer");
}

TEST_CASE("relay link: a silent client costs no buffer", "[relay]") {
  RelayDirection d(1 << 20);
  CHECK(d.Pending().empty());
  CHECK(d.buffered() == 0);
  CHECK(d.ReadSpace().size() == 4096);  // allocated on the first read, 4 KiB, growing with what is held
}

}  // namespace
}  // namespace ds
