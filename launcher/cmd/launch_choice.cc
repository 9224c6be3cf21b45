#include "launcher/cmd/launch_choice.h"

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/files.h"
#include "launcher/cmd/spawner_choice.h"
#include "launcher/coordinator/assign_builder.h"

namespace ds {
namespace {

// --fanout-tree: the nodes start each other's agents with their own ssh.
Status CheckFanoutTree(const CliOptions& cli, const std::string& launcher) {
  if (cli.fanout_tree <= 0) return Status::OK();
  if (launcher != "ssh")
    return Status::InvalidArgument(fmt::format(
        "{}: the nodes start each other's agents over ssh, which needs --launcher ssh, and this job starts its "
        "agents with {}",
        cli.fanout_tree_flag, launcher));
  if (cli.ship_agent)
    return Status::InvalidArgument(fmt::format(
        "{} with --ship-agent: the nodes start each other's agents from the dsagent path on their own disks; "
        "install dsagent there (or use --agent-path), or drop {}",
        cli.fanout_tree_flag, cli.fanout_tree_flag));
  return Status::OK();
}

}  // namespace

Result<LaunchChoice> ChooseLaunch(const LaunchPlan& plan, const CliOptions& cli, const PerNodeLaunch* per_node) {
  if (plan.nodes.empty()) return Status::InvalidArgument("the plan has no nodes");
  LaunchChoice c;
  c.argv = WorkerArgv(plan.job, SiblingBinary("dstrain", "runtime", EnvString("DSLAUNCH_DSTRAIN_PATH")));
  if (c.argv.empty()) return Status::InvalidArgument("nothing to run (no command and no trainer: section)");
  c.launcher = per_node ? "per-node" : ResolveLauncher(cli.launcher, plan, cli.force_multi);
  DS_RETURN_IF_ERROR(CheckFanoutTree(cli, c.launcher));
  auto ssh = SshOptionsForJob(plan.job, cli);
  if (!ssh.ok() && c.launcher != "local" && !per_node) return Status::InvalidArgument(ssh.status().message());
  if (ssh.ok()) c.ssh = *ssh;
  else c.ssh.connect_timeout = cli.connect_timeout;  // all that local agents use
  if (!per_node) DS_RETURN_IF_ERROR(CheckSpawner(c.launcher, plan, cli.launcher_args));
  return c;
}

}  // namespace ds
