// ClusterState: what `dslaunch cluster up` made for one cluster and how it is
// configured, kept in <state dir>/state so that `down` removes exactly what
// `up` created (and nothing that was there before), `up` again is a no-op
// that repairs, and `down` after a failed `up` still finds everything. The
// state directory also holds the cluster's keys and compose files
// (ClusterPaths). Plain data; Save is atomic (WriteFileDurably).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "common/status.h"

namespace ds {

struct ClusterState {
  std::string name;               // also the compose project and the prefix of everything created
  int nodes = 0;                  // node containers on this host (the controller is extra)
  int first_node = 1;             // this host's nodes are <name>-node-<first_node>, ...
  int remote_nodes = 0;           // manager: nodes other hosts add (in the hostfile after ours)
  bool joined = false;            // up --join: nodes for a cluster whose controller is on another host
  int slots = 1;                  // slots= of each node in the hostfile
  bool gpus = false;              // nodes reserve all GPUs (docker-compose.gpu.yml)
  std::string base_image;         // BASE_IMAGE of the Dockerfile
  std::string image;              // the image built for this cluster
  std::string network;            // the attachable overlay
  std::string checkpoint_volume;  // at /checkpoints everywhere
  std::string job_volume;         // at /job on the controller (the hostfile)
  std::string workspace;          // host folder mounted at the same path everywhere
  std::string data;               // host folder mounted read-only at the same path
  std::string shm_size = "8g";    // /dev/shm of each node

  // What up created; down removes these and only these.
  bool created_swarm = false;     // this host was in no swarm: down leaves it
  bool created_gwbridge = false;  // docker_gwbridge did not exist before up
  bool created_network = false;
  bool created_image = false;
  std::vector<std::string> created_volumes;
};

// ClusterState's fields, listed once, in the state file's order: the key,
// the variable of docker-compose.yml it also becomes in compose.env ("" =
// none) and the member. LoadClusterState, SaveClusterState and
// WriteComposeFiles (compose_files.h) all walk this one list, so a new field
// is added here and nowhere else.
struct ClusterStateField {
  using Member = std::variant<std::string ClusterState::*, int ClusterState::*, bool ClusterState::*,
                              std::vector<std::string> ClusterState::*>;
  const char* key;          // in the state file
  const char* compose_var;  // in compose.env; "" = not a compose variable
  Member member;
};
const std::vector<ClusterStateField>& ClusterStateFields();
// `f`'s value in `s` as both files write it: a count in decimal, true or
// false, a list joined with ','.
std::string FieldText(const ClusterState& s, const ClusterStateField& f);

// "name" must be a compose project name and a DNS label: [a-z][a-z0-9-]*, at
// most 32 characters. The error names the rule.
Status CheckClusterName(const std::string& name);

// Reads `path` ("key=value" lines). Errors name path:line.
Result<ClusterState> LoadClusterState(const std::string& path);
Status SaveClusterState(const ClusterState& state, const std::string& path);

// Where a cluster's files live: <root>/<name>/... with root
// DSLAUNCH_CLUSTER_DIR, else /var/lib/dslaunch/clusters as root, else
// ~/.local/state/dslaunch/clusters.
struct ClusterPaths {
  std::string dir;         // <root>/<name>, 0700
  std::string state;       // dir/state
  std::string keys;        // dir/keys: node/ (host key, authorized_keys), controller/ (client key,
                           //   known_hosts, ssh_config); mounted read-only into the containers
  std::string compose;     // dir/compose: copies of the compose files (down works without the source tree)
  std::string compose_env; // dir/compose/compose.env: the variables of docker-compose.yml
  std::string context;     // dir/context: the image's build context (rebuilt by every up)
  std::string hostfile;    // dir/hostfile: a copy of the controller's /job/hostfile
  std::string empty;       // dir/empty: mounted as the data folder when there is none
};
// Where clusters keep their state: DSLAUNCH_CLUSTER_DIR, else
// /var/lib/dslaunch/clusters as root, else $HOME/.local/state/dslaunch/clusters.
// InvalidArgument without HOME (never a folder under a shared /tmp).
Result<std::string> ClusterRoot();
ClusterPaths PathsOf(const std::string& name, const std::string& root);
Result<ClusterPaths> ClusterPathsOf(const std::string& name);

// A folder of a cluster's: a real directory (not a symlink) of this user's
// that nobody else may write to; else PermissionDenied naming it.
Status CheckOwnDir(const std::string& dir);

// --shm-size as Docker reads it: a number and an optional unit (b, k, m, g,
// t, p, then i and b), e.g. 8g, 512m, 1.5GiB; else InvalidArgument.
Status CheckShmSize(const std::string& value);

}  // namespace ds
