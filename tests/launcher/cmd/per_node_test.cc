#include "launcher/cmd/per_node.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

CliOptions PerNodeCli(int rank) {
  CliOptions c;
  c.node_rank = rank;
  c.selection.num_nodes = 3;
  c.master_addr = "10.0.0.1";
  return c;
}

TEST_CASE("per node: the command line's form, with the secret from a private file", "[unit]") {
  testing::TempDir tmp("dsl-test-pernode");
  const std::string secret = tmp.path() + "/secret";
  testing::WriteFile(secret, "0123456789abcdef0123\n");
  ::chmod(secret.c_str(), 0600);
  auto p = ResolvePerNode(PerNodeCli(2), {{"DSLAUNCH_SECRET_FILE", secret}});
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->nnodes == 3);
  CHECK((*p)->node_rank == 2);
  CHECK((*p)->addr == "10.0.0.1");
  CHECK((*p)->port == kDefaultRendezvousPort);
  CHECK((*p)->secret == "0123456789abcdef0123");
  CHECK((*p)->secret_from == PerNodeLaunch::Secret::kFile);
  CHECK((*p)->notice.empty());
  // Every node derives the same id and the same key for each node; each node
  // its own key; another secret, other keys, same job.
  auto q = ResolvePerNode(PerNodeCli(0), {{"DSLAUNCH_SECRET_FILE", secret}});
  CHECK((*q)->job_id == (*p)->job_id);
  CHECK(PerNodeAgentToken(**q, 2) == PerNodeAgentToken(**p, 2));
  CHECK(PerNodeAgentToken(**q, 1) != PerNodeAgentToken(**q, 2));
  testing::WriteFile(secret, "another-secret-of-16+\n");
  auto r = ResolvePerNode(PerNodeCli(0), {{"DSLAUNCH_SECRET_FILE", secret}});
  CHECK((*r)->job_id == (*p)->job_id);
  CHECK(PerNodeAgentToken(**r, 2) != PerNodeAgentToken(**p, 2));

  ::chmod(secret.c_str(), 0640);
  CHECK(ResolvePerNode(PerNodeCli(0), {{"DSLAUNCH_SECRET_FILE", secret}}).status().message() ==
        "DSLAUNCH_SECRET_FILE=" + secret + ": mode 640 lets others read or change it; chmod 600 it");
  testing::WriteFile(secret, "short\n");
  ::chmod(secret.c_str(), 0600);
  CHECK(ResolvePerNode(PerNodeCli(0), {{"DSLAUNCH_SECRET_FILE", secret}}).status().message().starts_with(
      "DSLAUNCH_SECRET_FILE=" + secret + ": expected a secret of at least 16 characters"));
}

TEST_CASE("per node: without a secret file, loopback makes a random secret, --insecure a constant", "[unit]") {
  CHECK(ResolvePerNode(PerNodeCli(0), {}).status().message() ==
        "the per-node form (--node_rank) needs the job secret in DSLAUNCH_SECRET_FILE (the same file on every node, "
        "mode 0600) when node 0 (10.0.0.1) is not on loopback; --insecure lets anyone who reaches 10.0.0.1:29500 "
        "join");
  CliOptions c = PerNodeCli(1);
  c.insecure = true;
  CHECK((*ResolvePerNode(c, {}))->secret_from == PerNodeLaunch::Secret::kInsecure);
  c = PerNodeCli(1);
  c.master_addr = "";
  c.rdzv_endpoint = "127.0.0.1:29411";
  auto p = ResolvePerNode(c, {});
  REQUIRE(p.ok());
  CHECK((*p)->addr == "127.0.0.1");
  CHECK((*p)->port == 29411);
  // Node 1 reads node 0's secret later (loopback_secret.h); node 0 makes a
  // new random one each time: no value another user can compute.
  CHECK((*p)->secret_from == PerNodeLaunch::Secret::kLoopback);
  CHECK((*p)->secret.empty());
  c.node_rank = 0;
  auto n0 = ResolvePerNode(c, {});
  auto again = ResolvePerNode(c, {});
  CHECK((*n0)->secret.size() == 64);
  CHECK((*n0)->secret != (*again)->secret);
  CHECK(*PerNodeListenAddress(**n0) == "127.0.0.1");
  c.rdzv_endpoint = "localhost:29411";
  CHECK(*PerNodeListenAddress(**ResolvePerNode(c, {})) == "127.0.0.1");
}

TEST_CASE("per node: Kubeflow's variables ask for it; a dslaunch worker's do not", "[unit]") {
  const KeyValues pet = {{"PET_NNODES", "4"}, {"PET_NODE_RANK", "3"}, {"PET_MASTER_ADDR", "127.0.0.1"},
                        {"PET_MASTER_PORT", "23456"}};
  auto p = ResolvePerNode(CliOptions{}, pet);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->nnodes == 4);
  CHECK((*p)->node_rank == 3);
  CHECK((*p)->port == 23456);
  CHECK((*p)->source == "PET_NNODES/PET_NODE_RANK");
  KeyValues plain = {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "23456"}, {"WORLD_SIZE", "2"}, {"RANK", "1"}};
  auto ambient = ResolvePerNode(CliOptions{}, plain);
  CHECK((*ambient)->node_rank == 1);
  CHECK((*ambient)->notice ==
        "MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK are set and no --hostfile is given: running the per-node form "
        "(Kubeflow PyTorchJob's plain form) as node 1 of 2, node 0 at 127.0.0.1:23456; give --hostfile, or unset "
        "them, to launch every node from here");
  plain.emplace_back("TORCHELASTIC_RUN_ID", "abc");  // inside a dslaunch or torchrun worker: not for us
  CHECK_FALSE(ResolvePerNode(CliOptions{}, plain)->has_value());
  CHECK_FALSE(ResolvePerNode(CliOptions{}, {})->has_value());
}

TEST_CASE("per node: errors name the flag or variable", "[unit]") {
  CliOptions c = PerNodeCli(3);
  CHECK(ResolvePerNode(c, {}).status().message() == "--node_rank: node rank 3 is not below the node count 3");
  c = PerNodeCli(0);
  c.selection.num_nodes = 0;
  CHECK(ResolvePerNode(c, {}).status().message() == "--node_rank: needs --nnodes N (how many nodes run this command)");
  c = CliOptions{};
  c.no_ssh = true;
  CHECK(ResolvePerNode(c, {}).status().message() == "--no_ssh: needs --node_rank R (this node's rank)");
  CHECK(ResolvePerNode(CliOptions{}, {{"PET_NNODES", "x"}, {"PET_NODE_RANK", "0"}}).status().message() ==
        "PET_NNODES: expected an integer between 1 and 1048576, got 'x'");
}

TEST_CASE("per node: ranks given at join: every node alike, one job id, a join key apart from the agents'", "[unit]") {
  testing::TempDir tmp("dsl-test-pernode");
  const std::string secret = tmp.path() + "/secret";
  testing::WriteFile(secret, "0123456789abcdef0123\n");
  ::chmod(secret.c_str(), 0600);
  CliOptions c;
  c.rdzv_join = true;
  c.elastic_min_nodes = 2;
  c.elastic_max_nodes = 4;
  c.rdzv_endpoint = "10.0.0.1:29400";
  c.rdzv_conf.last_call_timeout = 5;
  auto p = ResolvePerNode(c, {{"DSLAUNCH_SECRET_FILE", secret}});
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  const PerNodeLaunch& j = **p;
  CHECK(j.join);
  CHECK(j.node_rank == -1);
  CHECK(j.nnodes == 4);
  CHECK(j.min_nodes == 2);
  CHECK(j.addr == "10.0.0.1");
  CHECK(j.port == 29400);
  CHECK(j.conf.last_call_timeout == 5);
  CHECK(j.source == "--rdzv-endpoint");
  CliOptions no_port = c;
  no_port.rdzv_endpoint = "10.0.0.1";  // torchrun's c10d port
  CHECK((*ResolvePerNode(no_port, {{"DSLAUNCH_SECRET_FILE", secret}}))->port == 29400);
  // The --node_rank form at the same endpoint has the same id; --rdzv-id makes another job.
  CliOptions ranked;
  ranked.node_rank = 0;
  ranked.selection.num_nodes = 2;
  ranked.rdzv_endpoint = c.rdzv_endpoint;
  CHECK((*ResolvePerNode(ranked, {{"DSLAUNCH_SECRET_FILE", secret}}))->job_id == j.job_id);
  c.rdzv_id = "exp7";
  CHECK((*ResolvePerNode(c, {{"DSLAUNCH_SECRET_FILE", secret}}))->job_id != j.job_id);
  // The join key: from the secret, not any node's agent key.
  const std::string join = PerNodeJoinToken(j);
  CHECK(join.size() == 64);
  for (int node = 0; node < 4; ++node) CHECK(join != PerNodeAgentToken(j, node));
  PerNodeLaunch other = j;
  other.secret = "another-secret-of-16+";
  CHECK(PerNodeJoinToken(other) != join);
  // Fixed --nnodes N: MIN is N; --master_addr (with --rdzv-backend c10d) names the endpoint too.
  CliOptions fixed;
  fixed.rdzv_join = true;
  fixed.selection.num_nodes = 3;
  fixed.master_addr = "10.0.0.1";
  auto f = ResolvePerNode(fixed, {{"DSLAUNCH_SECRET_FILE", secret}});
  CHECK((*f)->nnodes == 3);
  CHECK((*f)->min_nodes == 3);
  CHECK((*f)->port == kDefaultRendezvousPort);
  CHECK((*f)->source == "--master_addr with --rdzv-backend c10d");
  // On loopback without a secret file every node has a fresh secret: the host's is published.
  c.rdzv_endpoint = "127.0.0.1:29400";
  CHECK((*ResolvePerNode(c, {}))->secret.size() == 64);
  c.rdzv_endpoint = "10.0.0.1:29400";
  CHECK(ResolvePerNode(c, {}).status().message() ==
        "the per-node form (--rdzv-endpoint) needs the job secret in DSLAUNCH_SECRET_FILE (the same file on every "
        "node, mode 0600) when node 0 (10.0.0.1) is not on loopback; --insecure lets anyone who reaches "
        "10.0.0.1:29400 join");
}

}  // namespace
}  // namespace ds
