// The files a cluster's containers are made from, all under its state
// directory: the compose files copied from docker/ (so `down` works without
// the source tree), compose.env with their variables, and the SSH keys
// mounted read-only into the containers. Also the docker-compose command line
// that uses them.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/cluster_state.h"
#include "launcher/cluster/command_runner.h"

namespace ds {

// Copies docker-compose.yml and docker-compose.gpu.yml from `docker_dir`,
// writes compose.env from `state` and nodes.yml: one service per node.
Status WriteComposeFiles(const ClusterState& state, const ClusterPaths& paths, const std::string& docker_dir);

// This host's nodes' container names, which are also their host names and
// DNS names on the overlay: <name>-node-<first_node> .. (state.nodes of them).
std::vector<std::string> NodeNames(const ClusterState& state);
// Every node of the hostfile: this host's, then the remote_nodes that other
// hosts add (`up --join`), numbered on.
std::vector<std::string> HostfileNodes(const ClusterState& state);
std::string ControllerName(const std::string& cluster);  // <name>-controller (docker-compose.yml)
// The compose service of node container `node` in nodes.yml: "node-3".
std::string NodeService(const ClusterState& state, const std::string& node);

// Creates `dir` (and its parents) and makes it 0700.
Status MakePrivateDir(const std::string& dir);

// docker-compose --project-name <name> --env-file ... --profile nodes -f ... -f nodes.yml <args...>
std::vector<std::string> ComposeArgv(const ClusterState& state, const ClusterPaths& paths,
                                     const std::vector<std::string>& args);

// Makes the cluster's throwaway keys once (ssh-keygen): keys/node/ holds the
// nodes' host key and authorized_keys, keys/controller/ the client key and
// ssh_config. Folders 0700, private keys 0600.
Status MakeClusterKeys(CommandRunner& runner, const ClusterPaths& paths, const std::string& name);

// Writes keys/controller/known_hosts: the nodes' shared host key under each
// node name (strict host key checking stays on).
Status WriteKnownHosts(const ClusterPaths& paths, const std::vector<std::string>& node_names);

// The hostfile of the nodes: "<container name> slots=N" lines.
std::string ClusterHostfile(const std::string& name, const std::vector<std::string>& node_names, int slots);

}  // namespace ds
