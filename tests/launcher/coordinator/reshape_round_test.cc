// ReshapeRound (reshape_round.h) alone: done once every owed agent answered
// and every replacement rank started; the line when done; why it is late.
#include "launcher/coordinator/reshape_round.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("reshape round: done when the owed agents answered and the replacements started", "[unit]") {
  const Clock::time_point t0{std::chrono::hours(1)};
  ReshapeRound r(t0, t0 + std::chrono::seconds(6), std::nullopt);
  r.SetSave(40, "w0 memory, w1 replica of w2's");
  r.Owe(0);
  r.Owe(1);
  r.ExpectStart(5);
  CHECK_FALSE(r.done());
  CHECK(r.Owes(1));
  CHECK_FALSE(r.Answered(3));  // never owed
  CHECK(r.Answered(0));
  CHECK_FALSE(r.Answered(0));  // twice
  CHECK(r.LateReason({"w0", "w1"}, 5) == "w1 did not answer within 5 s");
  CHECK(r.Answered(1));
  CHECK(r.LateReason({"w0", "w1"}, 5) == "rank 5 did not start within 5 s");
  r.Started(5);
  CHECK(r.done());
  CHECK(r.LateReason({"w0", "w1"}, 5).empty());
  CHECK(r.DoneLine(t0 + std::chrono::milliseconds(23)) ==
        "recovered in place at step 40 in 23 ms: w0 memory, w1 replica of w2's");
  CHECK(r.deadline() == t0 + std::chrono::seconds(6));
  CHECK_FALSE(r.cause());
}

}  // namespace
}  // namespace ds
