#include "common/env_registry.h"

#include <cstdlib>
#include <set>

#include <catch2/catch.hpp>

using namespace ds;

TEST_CASE("every registered variable is unique and documented") {
  std::set<std::string> names;
  for (const auto& p : EnvParams()) {
    CHECK(names.insert(p.name).second);
    CHECK(std::string(p.help).size() > 5);
  }
}

TEST_CASE("typed reads fall back to the default on malformed values") {
  ::setenv("DSLAUNCH_GENERATION", "7", 1);
  CHECK(EnvInt("DSLAUNCH_GENERATION") == 7);
  ::setenv("DSLAUNCH_GENERATION", "seven", 1);
  CHECK(EnvInt("DSLAUNCH_GENERATION") == 0);
  ::unsetenv("DSLAUNCH_GENERATION");
  CHECK(EnvInt("DSLAUNCH_GENERATION") == 0);
  ::setenv("DSLAUNCH_STOP_GRACE", "250ms", 1);
  CHECK(EnvSeconds("DSLAUNCH_STOP_GRACE") == Approx(0.25));
  ::unsetenv("DSLAUNCH_STOP_GRACE");
  CHECK(EnvSeconds("DSLAUNCH_STOP_GRACE") == Approx(1.0));
}

TEST_CASE("the env table lists settings and the worker contract") {
  std::string t = FormatEnvTable();
  CHECK(t.find("DSLAUNCH_LOG ") != std::string::npos);
  CHECK(t.find("MASTER_PORT") != std::string::npos);
  CHECK(t.find("Worker contract") != std::string::npos);
  // Aligned: every row's TYPE column starts where the header's does, however long the name.
  const size_t type_col = t.find("TYPE");
  for (const std::string name : {"DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING", "DSLAUNCH_LOG", "MASTER_PORT"}) {
    const size_t at = t.find("\n  " + name + " ");
    REQUIRE(at != std::string::npos);
    const size_t line = at + 1;
    CHECK(t.find_first_not_of(' ', line + 2 + name.size()) - line == type_col - (t.rfind('\n', type_col) + 1));
  }
  CHECK(t.find("MASTER_PORT") < t.find("free"));  // its real default, not 29500
}
