// ChooseLaunch: everything a run decides and refuses before it starts
// anything, in one place, so that `dslaunch --dry-run` refuses exactly what
// the run refuses (RunJob and the dry run both call it): something to run,
// the launcher (`auto` resolved), --fanout-tree's needs, the SSH settings,
// and the spawner's own conditions (--launcher local with a remote host,
// --launcher_args for a launcher that takes none). What needs the network
// (names resolving, hosts answering ssh) is the run's and `dslaunch check`'s.
// Pure apart from reading the env registry.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/cmd/per_node.h"
#include "launcher/config/plan.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

struct LaunchChoice {
  std::string launcher;           // "local", "ssh", "pdsh", "slurm", "openmpi", "mpich" or "per-node"
  SshOptions ssh;                 // the merged SSH settings (connect_timeout only, for local agents)
  std::vector<std::string> argv;  // each worker's command (the job's, or dstrain)
};

// The launch `plan` and `cli` describe; `per_node` is the per-node form's
// node 0 (may be null). InvalidArgument, naming the option as typed, for
// anything the run would refuse.
Result<LaunchChoice> ChooseLaunch(const LaunchPlan& plan, const CliOptions& cli, const PerNodeLaunch* per_node);

}  // namespace ds
