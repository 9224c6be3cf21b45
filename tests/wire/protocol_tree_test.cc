// The launch tree's messages (wire/protocol.h, wire_format.md "Launch
// tree"): round trips of every field, and every truncation refused.
#include <catch2/catch.hpp>

#include "tests/wire/truncations.h"
#include "wire/protocol.h"

namespace ds::msg {
namespace {

StartAgents TwoAgents() {
  StartAgents s;
  s.agents.push_back({9, "n9", {"ssh", "-T", "--", "n9", "exec 'dsagent' '--node-index' '9'"}, "token-of-n9"});
  s.agents.push_back({4000000000u, "", {}, ""});
  return s;
}

TEST_CASE("protocol: StartAgents and AgentEnded round-trip every field", "[protocol][tree]") {
  auto s = StartAgents::Decode(TwoAgents().Encode());
  REQUIRE(s.ok());
  REQUIRE(s->agents.size() == 2);
  CHECK(s->agents[0].node == 9);
  CHECK(s->agents[0].host == "n9");
  CHECK(s->agents[0].argv == TwoAgents().agents[0].argv);
  CHECK(s->agents[0].token == "token-of-n9");
  CHECK(s->agents[1].node == 4000000000u);
  CHECK(s->agents[1].argv.empty());
  CHECK(StartAgents::Decode(StartAgents{}.Encode())->agents.empty());

  auto e = AgentEnded::Decode(AgentEnded{7, 255, 0, "ssh: connect to host n7 port 22: Connection refused"}.Encode());
  REQUIRE(e.ok());
  CHECK(e->node == 7);
  CHECK(e->exit_code == 255);
  CHECK(e->signal == 0);
  CHECK(e->reason == "ssh: connect to host n7 port 22: Connection refused");
  CHECK(AgentEnded::Decode(AgentEnded{1, -1, 9, ""}.Encode())->signal == 9);
}

// The per-node form (wire_format.md "Join" and "Agent session").
TEST_CASE("protocol: Joined and Shutdown round-trip every field; truncations refused", "[protocol]") {
  auto j = Joined::Decode(Joined{7, 9}.Encode());
  REQUIRE(j.ok());
  CHECK(j->node_index == 7);
  CHECK(j->max_nodes == 9);
  CHECK(Shutdown::Decode(Shutdown{-3}.Encode())->exit_code == -3);
  CHECK(Shutdown::Decode(Shutdown{}.Encode())->exit_code == 0);
  CheckTruncations(Joined{1, 2});
  CheckTruncations(Shutdown{130});
}

TEST_CASE("protocol: every truncation of a launch tree message is refused, trailing bytes too", "[protocol][tree]") {
  CheckTruncations(TwoAgents());
  CheckTruncations(AgentEnded{3, 1, 0, "why"});
}

}  // namespace
}  // namespace ds::msg
