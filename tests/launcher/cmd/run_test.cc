// RunJob's pure parts: whether the summary on stderr is in colour
// (DSLAUNCH_COLOR). The launch itself is covered by tests/integration.
#include <catch2/catch.hpp>

#include "launcher/cmd/run.h"

namespace ds {
namespace {

TEST_CASE("run: DSLAUNCH_COLOR decides the summary's colour; auto colours only a terminal", "[cmd]") {
  CHECK(SummaryInColor("always", /*stderr_is_tty=*/false));  // piped into a pager that shows colour
  CHECK(SummaryInColor("always", true));
  CHECK_FALSE(SummaryInColor("never", true));
  CHECK_FALSE(SummaryInColor("never", false));
  CHECK(SummaryInColor("auto", true));
  CHECK_FALSE(SummaryInColor("auto", false));
}

}  // namespace
}  // namespace ds
