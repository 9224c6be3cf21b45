// RaiseFdLimit: raises the soft limit, never lowers it, and names the number
// when the hard limit is in the way.
#include "common/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

#include <catch2/catch.hpp>
#include <fmt/format.h>

namespace ds {
namespace {

// Restores this process's soft limit (lowering and raising the soft limit
// below the hard one needs no privilege).
struct SoftLimitGuard {
  rlimit saved{};
  SoftLimitGuard() { ::getrlimit(RLIMIT_NOFILE, &saved); }
  ~SoftLimitGuard() {
    rlimit now{};
    ::getrlimit(RLIMIT_NOFILE, &now);
    now.rlim_cur = std::min(saved.rlim_cur, now.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &now);
  }
};

TEST_CASE("fd limit: the soft limit is raised to what is needed and never lowered", "[fdlimit]") {
  SoftLimitGuard guard;
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  REQUIRE(lim.rlim_max >= 200);
  lim.rlim_cur = 100;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &lim) == 0);
  REQUIRE(RaiseFdLimit(150, "a test").ok());
  CHECK(FdLimit() == 150);
  REQUIRE(RaiseFdLimit(120, "a test").ok());
  CHECK(FdLimit() == 150);
}

TEST_CASE("fd limit: past the hard limit it is raised when allowed, else the error names the numbers",
          "[fdlimit]") {
  SoftLimitGuard guard;
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  if (lim.rlim_max == RLIM_INFINITY) {
    WARN("no hard limit on descriptors: nothing to check");
    return;
  }
  const uint64_t want = lim.rlim_max + 1;
  Status st = RaiseFdLimit(want, "9 agents");
  if (st.ok()) {  // CAP_SYS_RESOURCE: the hard limit went up too
    CHECK(FdLimit() == want);
  } else {
    INFO(st.message());
    CHECK(st.message().rfind(fmt::format("needs {} open files for 9 agents; the limit is ", want), 0) == 0);
    CHECK(st.message().find(fmt::format("(hard {})", lim.rlim_max)) != std::string::npos);
    CHECK(st.message().find(fmt::format("ulimit -n {}", want)) != std::string::npos);
    CHECK(FdLimit() == lim.rlim_max);  // it took what the hard limit gives
  }
}

}  // namespace
}  // namespace ds
