#include "launcher/report/stream_spec.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("stream spec: one value for every local rank, or per local rank", "[streams]") {
  auto all = ParseStreamSpec("-r", "3");
  REQUIRE(all.ok());
  CHECK(all->For(0) == 3);
  CHECK(all->For(-1) == 3);
  CHECK(all->any());
  auto per = ParseStreamSpec("-r", "0:1, 2:2");
  REQUIRE(per.ok());
  CHECK(per->For(0) == 1);
  CHECK(per->For(1) == 0);
  CHECK(per->For(2) == 2);
  CHECK(per->any());
  CHECK_FALSE(ParseStreamSpec("-t", "0")->any());
  CHECK_FALSE(ParseStreamSpec("-t", "0:0,1:0")->any());
}

TEST_CASE("stream spec: anything else is refused naming the flag as typed", "[streams]") {
  for (const char* bad : {"", "4", "-1", "x", "0:", ":1", "0:4", "a:1", "0:1,", "1;2"}) {
    auto r = ParseStreamSpec("--redirects", bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == std::string("--redirects ") + bad +
                                      ": expected 0-3 (1 stdout, 2 stderr, 3 both) for every local rank, or "
                                      "LOCAL_RANK:N pairs such as 0:1,1:2");
  }
}

}  // namespace
}  // namespace ds
