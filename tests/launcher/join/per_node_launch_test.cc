// The per-node form's keys and secret file (launcher/join/per_node_launch.h):
// one job id per rendezvous, keys apart per node and for the join, the
// secret file's checks word for word. How the command line fills a
// PerNodeLaunch is tests/launcher/cmd/per_node_test.cc.
#include "launcher/join/per_node_launch.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

PerNodeLaunch Keyed(const std::string& secret, const std::string& endpoint) {
  PerNodeLaunch p;
  p.secret = secret;
  p.job_id = PerNodeJobId(endpoint, "");
  return p;
}

TEST_CASE("per node launch: the job id comes from the rendezvous, the keys from the secret", "[unit]") {
  CHECK(PerNodeJobId("10.0.0.1:29500", "").size() == 12);
  CHECK(PerNodeJobId("10.0.0.1:29500", "") == PerNodeJobId("10.0.0.1:29500", ""));
  CHECK(PerNodeJobId("10.0.0.1:29500", "") != PerNodeJobId("10.0.0.1:29501", ""));
  CHECK(PerNodeJobId("10.0.0.1:29500", "a") != PerNodeJobId("10.0.0.1:29500", "b"));
  const PerNodeLaunch p = Keyed("0123456789abcdef0123", "10.0.0.1:29500");
  CHECK(PerNodeAgentToken(p, 1) != PerNodeAgentToken(p, 2));
  CHECK(PerNodeJoinToken(p) != PerNodeAgentToken(p, 0));
  CHECK(PerNodeAgentToken(p, 1) != PerNodeAgentToken(Keyed("another secret, 16+", "10.0.0.1:29500"), 1));
  CHECK(PerNodeJoinToken(p) != PerNodeJoinToken(Keyed("0123456789abcdef0123", "10.0.0.2:29500")));
}

TEST_CASE("per node launch: node 0 listens on the rendezvous address itself", "[unit]") {
  PerNodeLaunch p;
  p.addr = "localhost";
  CHECK(*PerNodeListenAddress(p) == "127.0.0.1");
  p.addr = "127.0.0.5";
  CHECK(*PerNodeListenAddress(p) == "127.0.0.5");
}

TEST_CASE("per node launch: a secret file too short says so", "[unit]") {
  testing::TempDir tmp("dsl-test-pernode-launch");
  const std::string path = tmp.path() + "/secret";
  testing::WriteFile(path, "short\n");
  ::chmod(path.c_str(), 0600);
  CHECK(ReadSecretFile(path).status().message() ==
        "DSLAUNCH_SECRET_FILE=" + path +
            ": expected a secret of at least 16 characters on its first line (e.g. openssl rand -hex 32)");
  testing::WriteFile(path, "0123456789abcdef0123\nrest\n");
  ::chmod(path.c_str(), 0600);
  CHECK(*ReadSecretFile(path) == "0123456789abcdef0123");
}

}  // namespace
}  // namespace ds
