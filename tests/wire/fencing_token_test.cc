// The agent's fencing check: a token at least the newest is admitted (and
// remembered), an older one is refused word for word, 0 only before any.
#include "wire/fencing_token.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("fencing: tokens that only grow are admitted, an older one is refused", "[unit]") {
  FencingGuard g;
  CHECK(g.newest() == 0);
  CHECK(g.Admit(0, "a").ok());  // no fencing yet: a job without coordinator:
  CHECK(g.Admit(5, "10.0.0.1:4000").ok());
  CHECK(g.Admit(5, "10.0.0.1:4000").ok());  // the same leader's next frame
  CHECK(g.newest() == 5);
  CHECK(g.Admit(9, "10.0.0.2:4000").ok());  // the next leader
  CHECK(g.newest() == 9);
  const Status old = g.Admit(5, "10.0.0.1:4000");  // the deposed leader, or its frame replayed
  CHECK(old.code() == Status::Code::kAborted);
  CHECK(old.message() ==
        "fencing: refused a frame from 10.0.0.1:4000 with token 5: a newer leader's (token 9) was seen (a deposed "
        "leader)");
  CHECK(g.newest() == 9);  // a refusal changes nothing
  CHECK(g.Admit(0, "10.0.0.3:4000").message() ==
        "fencing: refused a frame from 10.0.0.3:4000 without a token: a leader's (token 9) was seen");
  CHECK(g.Admit(9, "10.0.0.2:4000").ok());
}

}  // namespace
}  // namespace ds
