// `dslaunch cluster up` and `down` against FakeDocker: what is created, what
// is recorded, and that down removes exactly that.
#include <stdlib.h>

#include <filesystem>
#include <sstream>

#include <catch2/catch.hpp>

#include "launcher/cluster/cluster.h"
#include "launcher/cluster/cluster_state.h"
#include "tests/launcher/cluster/fake_docker.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

using testing::FakeDocker;
using testing::TempDir;

ClusterDownOptions Down() {
  ClusterDownOptions o;
  o.name = "c1";
  return o;
}

// A cluster root, a workspace and three stand-in binaries per test.
struct Bed {
  TempDir dir{"dsl-cluster-test"};
  std::ostringstream out;
  Bed() {
    ::setenv("DSLAUNCH_CLUSTER_DIR", (dir / "clusters").c_str(), 1);
    std::filesystem::create_directories(dir / "ws");
    for (const char* b : {"dslaunch", "dsagent", "dstrain"}) testing::WriteFile(dir / b, "#!/bin/true\n");
  }
  ~Bed() { ::unsetenv("DSLAUNCH_CLUSTER_DIR"); }
  ClusterUpOptions Options(int nodes = 3) {
    ClusterUpOptions o;
    o.name = "c1";
    o.nodes = nodes;
    o.workspace = dir / "ws";
    o.advertise_addr = "192.0.2.2";
    o.binaries = {dir / "dslaunch", dir / "dsagent", dir / "dstrain"};
    o.ssh_wait_s = 1;
    return o;
  }
  ClusterState State() { return LoadClusterState(dir / "clusters/c1/state").value(); }
};

TEST_CASE("up on a bare daemon makes everything and records it; down removes it all", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  REQUIRE(ClusterUp(bed.Options(), docker, bed.out).ok());
  CHECK(docker.swarm == "active");
  CHECK(docker.overlays.count("c1-net"));
  CHECK(docker.volumes == std::set<std::string>{"c1-checkpoints", "c1-job"});
  CHECK(docker.images.count("dslaunch-cluster-c1:latest"));
  CHECK(docker.containers == std::set<std::string>{"c1-node-1", "c1-node-2", "c1-node-3", "c1-controller"});
  CHECK(docker.Count("docker network create --driver overlay --attachable --opt com.docker.network.driver.mtu=") == 1);
  ClusterState s = bed.State();
  CHECK(s.created_swarm);
  CHECK(s.created_gwbridge);
  CHECK(s.created_network);
  CHECK(s.created_image);
  CHECK(s.base_image == "debian:bookworm");  // no local dslaunch-base:bookworm
  CHECK(testing::ReadFile(bed.dir / "clusters/c1/hostfile").find("c1-node-3 slots=1\n") != std::string::npos);
  CHECK(testing::ReadFile(bed.dir / "clusters/c1/keys/controller/known_hosts") ==
        "c1-node-1 ssh-ed25519 AAAAfake\nc1-node-2 ssh-ed25519 AAAAfake\nc1-node-3 ssh-ed25519 AAAAfake\n");
  CHECK(bed.out.str().find("docker swarm join --token SWMTKN-fake 192.0.2.2:2377") != std::string::npos);

  REQUIRE(ClusterDown(Down(), docker, bed.out).ok());
  CHECK(docker.containers.empty());
  CHECK(docker.volumes.empty());
  CHECK(docker.images.empty());
  CHECK(docker.swarm == "inactive");
  CHECK_FALSE(docker.networks.count("c1-net"));
  CHECK_FALSE(docker.networks.count("docker_gwbridge"));
  CHECK_FALSE(std::filesystem::exists(bed.dir / "clusters/c1"));
  // Nothing left to do is not an error.
  CHECK(ClusterDown(Down(), docker, bed.out).ok());
}

TEST_CASE("down leaves what was there before up: the swarm, gwbridge, a given volume, other overlays", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  docker.swarm = "active";
  docker.manager = true;
  docker.networks.insert({"docker_gwbridge", "ingress", "theirs"});
  docker.overlays.insert({"ingress", "theirs"});
  docker.volumes.insert("shared-ckpt");
  ClusterUpOptions o = bed.Options();
  o.checkpoint_volume = "shared-ckpt";
  REQUIRE(ClusterUp(o, docker, bed.out).ok());
  CHECK(docker.Count("swarm init") == 0);
  CHECK(bed.State().created_volumes == std::vector<std::string>{"c1-job"});
  ClusterDownOptions keep = Down();
  keep.keep_image = true;
  REQUIRE(ClusterDown(keep, docker, bed.out).ok());
  CHECK(docker.swarm == "active");
  CHECK(docker.networks.count("theirs"));
  CHECK(docker.networks.count("docker_gwbridge"));
  CHECK(docker.volumes == std::set<std::string>{"shared-ckpt"});
  CHECK(docker.images.count("dslaunch-cluster-c1:latest"));  // --keep-image
}

TEST_CASE("down --keep-checkpoints keeps the checkpoint volume, which the next up then never removes", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  REQUIRE(ClusterUp(bed.Options(), docker, bed.out).ok());
  ClusterDownOptions keep = Down();
  keep.keep_checkpoints = true;
  REQUIRE(ClusterDown(keep, docker, bed.out).ok());
  CHECK(docker.volumes == std::set<std::string>{"c1-checkpoints"});
  REQUIRE(ClusterUp(bed.Options(), docker, bed.out).ok());
  CHECK(bed.State().created_volumes == std::vector<std::string>{"c1-job"});
  REQUIRE(ClusterDown(Down(), docker, bed.out).ok());
  CHECK(docker.volumes == std::set<std::string>{"c1-checkpoints"});
}

TEST_CASE("a swarm up created stays while another overlay uses it", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  REQUIRE(ClusterUp(bed.Options(), docker, bed.out).ok());
  docker.networks.insert("later");
  docker.overlays.insert("later");
  REQUIRE(ClusterDown(Down(), docker, bed.out).ok());
  CHECK(docker.swarm == "active");
  CHECK(bed.out.str().find("kept the swarm cluster c1 created: still used by later") != std::string::npos);
}

TEST_CASE("up twice creates nothing twice and keeps the record of the first", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  REQUIRE(ClusterUp(bed.Options(), docker, bed.out).ok());
  ClusterUpOptions again = bed.Options(0);  // 0: as the cluster has
  REQUIRE(ClusterUp(again, docker, bed.out).ok());
  CHECK(docker.Count("swarm init") == 1);
  CHECK(docker.Count("network create") == 1);
  CHECK(docker.Count("volume create") == 2);
  ClusterState s = bed.State();
  CHECK(s.nodes == 3);
  CHECK(s.created_swarm);
  CHECK(s.created_network);
  CHECK(s.created_volumes.size() == 2);
}

TEST_CASE("up --replace starts lost nodes without building or recreating", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  ClusterUpOptions o = bed.Options();
  o.replace = true;
  CHECK(ClusterUp(o, docker, bed.out).code() == Status::Code::kNotFound);  // no such cluster yet
  REQUIRE(ClusterUp(bed.Options(), docker, bed.out).ok());
  docker.containers.erase("c1-node-2");
  docker.commands.clear();
  REQUIRE(ClusterUp(o, docker, bed.out).ok());
  CHECK(docker.containers.count("c1-node-2"));
  CHECK(docker.Count("docker build") == 0);
  CHECK(docker.Count("up --detach --remove-orphans --no-recreate") == 1);
}

TEST_CASE("down after an up that failed half-way removes what that up made", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  docker.fail_on = "docker build";
  Status st = ClusterUp(bed.Options(), docker, bed.out);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("docker build --tag dslaunch-cluster-c1:latest") != std::string::npos);
  CHECK(st.message().find("fake failure of docker build") != std::string::npos);
  docker.fail_on.clear();
  REQUIRE(ClusterDown(Down(), docker, bed.out).ok());
  CHECK(docker.swarm == "inactive");
  CHECK(docker.volumes.empty());
  CHECK_FALSE(docker.networks.count("c1-net"));
}

TEST_CASE("a node container that does not start fails up with its name", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  docker.wont_start = {"c1-node-2"};
  Status st = ClusterUp(bed.Options(), docker, bed.out);
  CHECK(st.message().find("containers that docker-compose started are not running") != std::string::npos);
  CHECK(st.message().find("\n  c1-node-2 exited") != std::string::npos);
  CHECK(docker.Count("dslaunch check") == 0);  // no wait for SSH on a node that is not there
}

TEST_CASE("up refuses a system folder as the workspace and a bad name", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  for (const char* ws : {"/", "/etc", "/usr/lib", "/opt"}) {  // /opt would hide /opt/dslaunch
    ClusterUpOptions o = bed.Options();
    o.workspace = ws;
    Status st = ClusterUp(o, docker, bed.out);
    INFO(ws);
    CHECK(st.code() == Status::Code::kInvalidArgument);
    CHECK(st.message().find("a system folder cannot be mounted") != std::string::npos);
  }
  ClusterUpOptions data = bed.Options();
  data.data = "/usr";
  CHECK(ClusterUp(data, docker, bed.out).message().find("--data '/usr': a system folder") != std::string::npos);
  std::filesystem::create_directories(bed.dir / "a:b");
  ClusterUpOptions colon = bed.Options();
  colon.workspace = bed.dir / "a:b";
  CHECK(ClusterUp(colon, docker, bed.out).message().find("compose cannot mount a path with ':'") != std::string::npos);
  ClusterUpOptions o = bed.Options();
  o.workspace = bed.dir / "missing";
  CHECK(ClusterUp(o, docker, bed.out).message().find("not a folder") != std::string::npos);
  o = bed.Options();
  o.name = "Bad_Name";
  CHECK(ClusterUp(o, docker, bed.out).code() == Status::Code::kInvalidArgument);
  CHECK(docker.commands.empty());  // refused before asking Docker anything
}

TEST_CASE("up refuses a --shm-size that is not a size: a newline would inject lines into state and compose.env",
          "[cluster]") {
  Bed bed;
  FakeDocker docker;
  for (const char* bad : {"8g\nDSLAUNCH_IMAGE=evil:latest", "8 g", "lots", "-1g", "8g --privileged"}) {
    ClusterUpOptions o = bed.Options();
    o.shm_size = bad;
    Status st = ClusterUp(o, docker, bed.out);
    INFO(bad);
    CHECK(st.code() == Status::Code::kInvalidArgument);
    CHECK(st.message().find("expected a size such as 8g, 512m or 1.5GiB") != std::string::npos);
  }
  CHECK(docker.commands.empty());
  for (const char* good : {"8g", "512m", "1.5GiB", "1073741824"}) CHECK(CheckShmSize(good).ok());
}

TEST_CASE("up refuses a state folder another user made first, and a state root without HOME", "[cluster]") {
  Bed bed;
  FakeDocker docker;
  std::filesystem::create_directories(bed.dir / "clusters/c1");
  REQUIRE(::chown((bed.dir / "clusters/c1").c_str(), 65534, 65534) == 0);
  Status st = ClusterUp(bed.Options(), docker, bed.out);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message().find(bed.dir / "clusters/c1 has owner uid 65534") == 0);
  std::filesystem::remove(bed.dir / "clusters/c1");
  std::filesystem::create_directory_symlink(bed.dir / "ws", bed.dir / "clusters/c1");
  CHECK(ClusterUp(bed.Options(), docker, bed.out).message().find("is not a directory (a symbolic link?)") !=
        std::string::npos);
  CHECK(docker.commands.empty());
  ::unsetenv("DSLAUNCH_CLUSTER_DIR");
  const std::string home = getenv("HOME") ? getenv("HOME") : "";
  ::unsetenv("HOME");
  if (::geteuid() != 0)
    CHECK(ClusterRoot().status().message().find("HOME is not set") == 0);
  else
    CHECK(*ClusterRoot() == "/var/lib/dslaunch/clusters");
  if (!home.empty()) ::setenv("HOME", home.c_str(), 1);
}

TEST_CASE("several hosts: the manager lists remote nodes, a worker host joins with its own nodes", "[cluster]") {
  Bed manager_bed;
  FakeDocker manager;
  ClusterUpOptions o = manager_bed.Options(2);
  o.remote_nodes = 2;
  REQUIRE(ClusterUp(o, manager, manager_bed.out).ok());
  CHECK(testing::ReadFile(manager_bed.dir / "clusters/c1/hostfile").find("c1-node-4 slots=1\n") != std::string::npos);
  CHECK(manager.Count("dslaunch check --connect-timeout 5 --include c1-node-1@c1-node-2") == 1);
  CHECK(manager_bed.out.str().find("dslaunch cluster up --name c1 --join --first-node 3 --nodes M") != std::string::npos);
  const std::string keys = manager_bed.dir / "clusters/c1/keys/node";

  Bed worker_bed;
  FakeDocker worker;
  worker.swarm = "active";  // joined the manager's swarm: its overlay is there to attach to
  worker.attachable_elsewhere.insert("c1-net");
  ClusterUpOptions j = worker_bed.Options(2);
  j.join = true;
  CHECK(ClusterUp(j, worker, worker_bed.out).message().find("--join needs --first-node K") != std::string::npos);
  j.first_node = 3;
  Status no_keys = ClusterUp(j, worker, worker_bed.out);
  CHECK(no_keys.message().find("--join: the cluster's node keys are not in") != std::string::npos);
  std::filesystem::create_directories(worker_bed.dir / "clusters/c1/keys");
  std::filesystem::copy(keys, worker_bed.dir / "clusters/c1/keys/node");
  REQUIRE(ClusterUp(j, worker, worker_bed.out).ok());
  CHECK(worker.containers == std::set<std::string>{"c1-anchor", "c1-node-3", "c1-node-4"});
  CHECK(worker.Count("swarm init") == 0);
  CHECK(worker.Count("network create") == 0);
  CHECK(worker.Count("ssh-keygen") == 0);
  CHECK(worker.Count("up --detach --remove-orphans node-3 node-4") == 1);
  CHECK(worker.Count("dslaunch check") == 0);  // the manager checks
  REQUIRE(ClusterDown(Down(), worker, worker_bed.out).ok());
  CHECK(worker.containers.empty());
  CHECK(worker.swarm == "active");  // joined by hand, left by hand
  CHECK(worker.volumes.empty());
}

TEST_CASE("--join only on a swarm worker, and a worker host needs --join", "[cluster]") {
  Bed bed;
  FakeDocker docker;  // in no swarm
  ClusterUpOptions j = bed.Options(1);
  j.join = true;
  j.first_node = 2;
  CHECK(ClusterUp(j, docker, bed.out).message().find("--join: this host must be a swarm worker") != std::string::npos);
  Bed bed2;
  FakeDocker worker;
  worker.swarm = "active";
  CHECK(ClusterUp(bed2.Options(), worker, bed2.out).message().find("here `dslaunch cluster up --join` to add nodes") !=
        std::string::npos);
}

}  // namespace
}  // namespace ds
