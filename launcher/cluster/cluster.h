// `dslaunch cluster up|down|status|run`: a training cluster of Docker
// containers on an attachable overlay network (docker/README.md). `up` makes
// everything and records what it made (ClusterState); `down` removes exactly
// that; `status` and `run` execute dslaunch inside the controller container,
// which is on the overlay and not in the hostfile. Progress goes to `out`;
// the functions never exit. Not thread-safe.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/command_runner.h"

namespace ds {

struct ClusterUpOptions {
  std::string name = "dslaunch";
  int nodes = 0;                  // 0 = as the cluster has (a new one: 2)
  int slots = 0;                  // slots= per node (GPUs per node with gpus); 0 = as before, else 1
  bool gpus = false;              // reserve every GPU of the host for each node
  std::string base_image;         // "" = dslaunch-base:bookworm if present, else debian:bookworm;
                                  //   with gpus the Dockerfile's CUDA image
  std::string workspace;          // host folder mounted at its own path everywhere ("" = current directory)
  std::string data;               // host folder mounted read-only ("" = /usr/share/datasets if present)
  std::string shm_size;           // "" = as before, else 8g
  std::string checkpoint_volume;  // "" = <name>-checkpoints (an existing one is used and never removed)
  std::string advertise_addr;     // for `docker swarm init`; "" = the default route's IPv4 address
  bool replace = false;           // only start lost nodes again: no build, no recreation
  // Several hosts (docker/README.md): the manager's up lists remote_nodes more
  // nodes in the hostfile; each other host, a swarm worker, runs up --join
  // with its own first_node and gets nodes but no controller.
  int remote_nodes = -1;          // -1 = as before (a new cluster: 0)
  bool join = false;
  int first_node = 0;             // --join: the number of this host's first node (required)
  double ssh_wait_s = 120;        // how long to wait for every node to answer SSH
  std::vector<std::string> binaries;  // what the image carries; empty = ClusterBinaries()
};

Status ClusterUp(const ClusterUpOptions& options, CommandRunner& runner, std::ostream& out);

struct ClusterDownOptions {
  std::string name = "dslaunch";
  bool keep_image = false;        // leave the built image (a later `up` starts sooner)
  bool keep_checkpoints = false;  // leave the checkpoint volume up made (a later `up` uses it, and
                                  //   its `down` never removes it)
};

// Removes what `up` recorded; a cluster that does not exist is not an error.
Status ClusterDown(const ClusterDownOptions& options, CommandRunner& runner, std::ostream& out);

// `dslaunch check` in the controller: one row per node. Returns check's exit code.
Result<int> ClusterStatus(const std::string& name, CommandRunner& runner, std::ostream& out);

// Runs `dslaunch <args>` in the controller from the current directory (which
// must be inside the workspace), streaming its output. SIGINT/SIGTERM, or
// this process dying, closes the controller dslaunch's stdin, which stops the
// job everywhere (DSLAUNCH_STDIN_LIFELINE). Returns dslaunch's exit code.
Result<int> ClusterRun(const std::string& name, const std::vector<std::string>& args);

}  // namespace ds
