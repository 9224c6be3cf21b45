// The settings of `dslaunch cluster up`: what the command line says, else
// what the cluster already has (its state file), else the defaults; and the
// checks on them (counts, --join's rules, folders compose can mount at their
// own path without hiding the container's system). Asks Docker only whether
// the local base image exists.
#pragma once

#include "common/status.h"
#include "launcher/cluster/cluster.h"
#include "launcher/cluster/cluster_state.h"
#include "launcher/cluster/command_runner.h"

namespace ds {

// Fills `state` (loaded from the state file when `existing`) from `options`.
Status ApplyUpOptions(const ClusterUpOptions& options, CommandRunner& runner, const ClusterPaths& paths,
                      bool existing, ClusterState* state);

}  // namespace ds
