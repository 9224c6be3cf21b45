// Helpers for tests that run against a netns test cluster brought up by
// tests/cluster/with-cluster (scripts/netns-cluster). The wrapper exports
// DSLAUNCH_TEST_CLUSTER=<state dir>; tests tagged [cluster] read the nodes
// from it. Test-only code.
#pragma once

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/env_registry.h"
#include "tests/test_util/files.h"
#include "tests/test_util/skip.h"
#include "tests/test_util/wait_until.h"

namespace ds::test {

// Why a [cluster] case skips run outside the wrapper: DS_SKIP(kNoCluster).
inline constexpr const char* kNoCluster =
    "no netns test cluster: DSLAUNCH_TEST_CLUSTER is not set (tests/cluster/with-cluster sets it)";

struct ClusterNode {
  std::string alias;  // ssh config alias, as in the generated hostfile
  std::string netns;  // network namespace name
  std::string addr;   // eth0 address
};

struct TestCluster {
  std::string dir;                // state dir; "" when no cluster is up
  std::vector<ClusterNode> nodes;
  std::string ssh_config() const { return dir + "/ssh_config"; }
  std::string known_hosts() const { return dir + "/known_hosts"; }
};

inline TestCluster LoadTestCluster() {
  TestCluster c;
  auto dir = GetAnyEnv("DSLAUNCH_TEST_CLUSTER");
  if (!dir || dir->empty()) return c;
  c.dir = *dir;
  std::ifstream in(c.dir + "/nodes");
  ClusterNode n;
  while (in >> n.alias >> n.netns >> n.addr) c.nodes.push_back(n);
  return c;
}

using testing::ReadFile;
using testing::WriteFile;

// testing::WaitUntil with the limit in seconds (tests/test_util/wait_until.h).
inline bool WaitUntil(const std::function<bool()>& pred, int seconds) {
  return testing::WaitUntil(pred, std::chrono::seconds(seconds), std::chrono::milliseconds(20));
}

}  // namespace ds::test
