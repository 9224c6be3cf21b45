// ReadAgentSecret (agent/agent_secret.h): where the agent's key comes from.
#include "agent/agent_secret.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

TEST_CASE("agent secret: the token comes from a private --secret-file first, else from the fd", "[agent]") {
  testing::TempDir tmp("dsl-test-secret");
  const std::string file = tmp.path() + "/token";
  testing::WriteFile(file, "from-file\n");
  ::chmod(file.c_str(), 0600);
  CHECK(*ReadAgentSecret(file) == "from-file");
  int p[2];
  REQUIRE(::pipe(p) == 0);
  REQUIRE(::write(p[1], "from-fd\n", 8) == 8);
  ::close(p[1]);
  ::setenv("DSLAUNCH_SECRET_FD", std::to_string(p[0]).c_str(), 1);
  ::chmod(file.c_str(), 0644);  // readable by others: not ours to trust
  CHECK(*ReadAgentSecret(file) == "from-fd");
  ::unsetenv("DSLAUNCH_SECRET_FD");
}

}  // namespace
}  // namespace ds
