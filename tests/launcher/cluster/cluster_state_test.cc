#include "launcher/cluster/cluster_state.h"

#include <catch2/catch.hpp>

#include <set>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST_CASE("cluster state: every field survives a save and a load", "[cluster]") {
  TempDir dir;
  ClusterState s;
  s.name = "c1";
  s.nodes = 3;
  s.slots = 8;
  s.gpus = true;
  s.base_image = "nvidia/cuda:12.8.1-devel-ubuntu24.04";
  s.image = "dslaunch-cluster-c1:latest";
  s.network = "c1-net";
  s.checkpoint_volume = "shared-ckpt";
  s.job_volume = "c1-job";
  s.workspace = "/srv/proj with space";
  s.data = "/data";
  s.shm_size = "16g";
  s.created_swarm = true;
  s.created_network = true;
  s.created_image = true;
  s.created_volumes = {"c1-job", "c1-checkpoints"};
  REQUIRE(SaveClusterState(s, dir / "state").ok());
  Result<ClusterState> back = LoadClusterState(dir / "state");
  REQUIRE(back.ok());
  CHECK(back->name == "c1");
  CHECK(back->nodes == 3);
  CHECK(back->slots == 8);
  CHECK(back->gpus);
  CHECK(back->base_image == s.base_image);
  CHECK(back->workspace == "/srv/proj with space");
  CHECK(back->shm_size == "16g");
  CHECK(back->created_swarm);
  CHECK_FALSE(back->created_gwbridge);
  CHECK(back->created_volumes == s.created_volumes);
}

// The file as the field-by-field writer before ClusterStateFields wrote it:
// the one list keeps its keys, order and formats.
TEST_CASE("cluster state: the file's bytes are one line per field, in the list's order", "[cluster]") {
  TempDir dir;
  ClusterState s;
  s.name = "c1";
  s.nodes = 2;
  s.remote_nodes = 1;
  s.joined = true;
  s.image = "img:1";
  s.created_volumes = {"a", "b"};
  REQUIRE(SaveClusterState(s, dir / "state").ok());
  CHECK(testing::ReadFile(dir / "state") ==
        "# dslaunch cluster state: what `dslaunch cluster up` made; read by down\n"
        "name=c1\nnodes=2\nfirst_node=1\nremote_nodes=1\njoined=true\nslots=1\ngpus=false\nbase_image=\n"
        "image=img:1\nnetwork=\ncheckpoint_volume=\njob_volume=\nworkspace=\ndata=\nshm_size=8g\n"
        "created_swarm=false\ncreated_gwbridge=false\ncreated_network=false\ncreated_image=false\n"
        "created_volumes=a,b\n");
  std::set<std::string> keys, vars;
  for (const ClusterStateField& f : ClusterStateFields()) {
    CHECK(keys.insert(f.key).second);
    if (f.compose_var[0] != '\0') CHECK(vars.insert(f.compose_var).second);
  }
  CHECK(vars == std::set<std::string>{"DSLAUNCH_CLUSTER", "DSLAUNCH_IMAGE", "DSLAUNCH_NETWORK", "DSLAUNCH_WORKSPACE",
                                      "DSLAUNCH_DATA", "DSLAUNCH_CHECKPOINT_VOLUME", "DSLAUNCH_JOB_VOLUME",
                                      "DSLAUNCH_SHM_SIZE"});
}

TEST_CASE("cluster state: a damaged file is an error naming path:line", "[cluster]") {
  TempDir dir;
  WriteFile(dir / "state", "name=c1\nnodes=three\n");
  CHECK(LoadClusterState(dir / "state").status().message().rfind(dir / "state" + ":2: nodes: expected a count", 0) == 0);
  WriteFile(dir / "state", "name=c1\ncreated_swarm=yes\n");
  CHECK(LoadClusterState(dir / "state").status().message().find(":2: created_swarm: expected true or false") !=
        std::string::npos);
  WriteFile(dir / "state", "name=c1\ncolour=blue\n");
  CHECK(LoadClusterState(dir / "state").status().message().find(":2: unknown key 'colour'") != std::string::npos);
  // Values compose and Docker are given pass the command line's checks when read back.
  WriteFile(dir / "state", "name=c1\nshm_size=8g --privileged\n");
  CHECK(LoadClusterState(dir / "state").status().message().find("--shm-size '8g --privileged': expected a size") !=
        std::string::npos);
  WriteFile(dir / "state", "name=c1\nimage=-v /:/host\n");
  CHECK(LoadClusterState(dir / "state").status().message().find("expected a Docker image, network or volume name") !=
        std::string::npos);
  WriteFile(dir / "state", "name=c1\nworkspace=relative/dir\n");
  CHECK(LoadClusterState(dir / "state").status().message().find("expected an absolute folder") != std::string::npos);
  WriteFile(dir / "state", "name=Bad_Name\n");
  CHECK(LoadClusterState(dir / "state").status().message().find("cluster name 'Bad_Name'") != std::string::npos);
}

TEST_CASE("cluster names are DNS labels that compose accepts", "[cluster]") {
  CHECK(CheckClusterName("dslaunch").ok());
  CHECK(CheckClusterName("a-1").ok());
  for (const char* bad : {"", "1abc", "a_b", "A", "a.b", "abcdefghijabcdefghijabcdefghijabc"}) {
    INFO(bad);
    CHECK(CheckClusterName(bad).code() == Status::Code::kInvalidArgument);
  }
}

TEST_CASE("cluster paths live under DSLAUNCH_CLUSTER_DIR's folder per cluster", "[cluster]") {
  ClusterPaths p = PathsOf("c1", "/r");
  CHECK(p.dir == "/r/c1");
  CHECK(p.state == "/r/c1/state");
  CHECK(p.compose_env == "/r/c1/compose/compose.env");
}

}  // namespace
}  // namespace ds
