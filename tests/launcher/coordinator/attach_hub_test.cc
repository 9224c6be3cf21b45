// launcher/coordinator/attach_hub.cc: what each `dslaunch attach` client is
// sent, and a client that falls behind (wire_format.md "Attach").
#include "launcher/coordinator/attach_hub.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds {
namespace {

using test::FakeLink;
using wire::MsgType;

std::vector<std::string> Lines(const FakeLink& l) {
  std::vector<std::string> out;
  for (const auto& [type, payload] : l.sent)
    if (type == MsgType::kAttachLine) {
      auto m = msg::AttachLine::Decode(payload);
      REQUIRE(m.ok());
      out.push_back(m->rank < 0 ? m->line : fmt::format("{}:{} {}", m->host, m->rank, m->line));
    }
  return out;
}

TEST_CASE("attach hub: a client gets the history, the status, every line and the end, then is closed", "[attach]") {
  AttachHub hub;
  hub.OnStatus("before anyone");
  auto a = std::make_shared<FakeLink>();
  hub.Add(a, {"dslaunch attach: job j: running\n", {"h:1", "g:2"}});
  REQUIRE(a->sent.size() == 2);
  CHECK(a->sent[0].first == MsgType::kAttached);
  CHECK(msg::Attached::Decode(a->sent[0].second)->coordinators == std::vector<std::string>{"h:1", "g:2"});
  CHECK(msg::AttachStatus::Decode(a->sent[1].second)->text == "before anyone");
  hub.OnLine(3, "w1", 1, 1, "step 10");
  hub.OnNotice("dslaunch: restart 1/3");
  hub.OnStatus("before anyone");  // unchanged: not sent again
  hub.OnStatus("gen 1");
  CHECK(Lines(*a) == std::vector<std::string>{"w1:3 step 10", "dslaunch: restart 1/3"});
  CHECK(hub.clients() == 1);
  hub.End(7, "dslaunch: exit code 7\n");
  CHECK(a->sent.back().first == MsgType::kAttachEnd);
  CHECK(msg::AttachEnd::Decode(a->sent.back().second)->exit_code == 7);
  CHECK(a->closed());
  CHECK(hub.clients() == 0);

  auto late = std::make_shared<FakeLink>();  // after the end: the history and the end at once
  hub.Add(late, {"h", {}});
  REQUIRE(late->sent.size() == 2);
  CHECK(late->sent[1].first == MsgType::kAttachEnd);
  CHECK(late->closed());
}

TEST_CASE("attach hub: a client behind loses lines, counted once it catches up; the end is never lost", "[attach]") {
  AttachHub hub;
  auto slow = std::make_shared<FakeLink>(), fast = std::make_shared<FakeLink>();
  hub.Add(slow, {"", {}});
  hub.Add(fast, {"", {}});
  hub.OnLine(0, "w0", 0, 2, "a");
  slow->queued = AttachHub::kMaxQueued + 1;
  hub.OnLine(0, "w0", 0, 2, "b");
  hub.OnLine(0, "w0", 0, 2, "c");
  hub.OnStatus("not to the slow one");
  slow->queued = 0;
  hub.OnLine(0, "w0", 0, 2, "d");
  CHECK(Lines(*slow) == std::vector<std::string>{"w0:0 a", "dslaunch: 2 lines not shown here (this attach fell behind)",
                                                 "w0:0 d"});
  CHECK(Lines(*fast) == std::vector<std::string>{"w0:0 a", "w0:0 b", "w0:0 c", "w0:0 d"});
  slow->queued = AttachHub::kMaxQueued * 2;
  hub.End(0, "");
  CHECK(slow->sent.back().first == MsgType::kAttachEnd);

  auto gone = std::make_shared<FakeLink>();  // a closed client is dropped
  AttachHub h2;
  h2.Add(gone, {"", {}});
  gone->Close("bye");
  h2.OnLine(0, "w0", 0, 1, "x");
  CHECK(h2.clients() == 0);
}

}  // namespace
}  // namespace ds
