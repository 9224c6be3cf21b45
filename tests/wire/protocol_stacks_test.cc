// The hang stack messages (wire/protocol.h, wire_format.md "Hang stacks"):
// every field round-trips and every truncation is refused.
#include <catch2/catch.hpp>

#include "tests/wire/truncations.h"
#include "wire/protocol.h"

namespace ds::msg {
namespace {

TEST_CASE("protocol: DumpStacks and Stacks round-trip every field", "[protocol][stacks]") {
  auto d = DumpStacks::Decode(DumpStacks{7, 5000}.Encode());
  REQUIRE(d.ok());
  CHECK(d->generation == 7);
  CHECK(d->deadline_ms == 5000);

  Stacks m{7, {{5, 4242, "eu-stack", "PID 4242 - process\nTID 4242:\n#0  0x1 poll\n"}, {6, 4243, "", "no tool"}}};
  auto s = Stacks::Decode(m.Encode());
  REQUIRE(s.ok());
  CHECK(s->generation == 7);
  REQUIRE(s->ranks.size() == 2);
  CHECK(s->ranks[0].rank == 5);
  CHECK(s->ranks[0].pid == 4242);
  CHECK(s->ranks[0].tool == "eu-stack");
  CHECK(s->ranks[0].text == m.ranks[0].text);
  CHECK(s->ranks[1].tool.empty());
  CHECK(s->ranks[1].text == "no tool");
}

TEST_CASE("protocol: every truncation of the stack messages is refused", "[protocol][stacks]") {
  CheckTruncations(DumpStacks{7, 5000});
  CheckTruncations(Stacks{7, {{5, 4242, "gdb", "#0 x"}}});
}

}  // namespace
}  // namespace ds::msg
