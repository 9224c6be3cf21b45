// Which spawner starts the agents, and with which SSH settings, merged from
// every place they can be set. Highest first:
//   1. the command line: --connect-timeout, --ssh_port, --fanout, --ship-agent;
//   2. the job file's ssh: section (strict_host_key_checking, connect_timeout, port);
//   3. the DSLAUNCH_SSH_CONFIG / DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING /
//      DSLAUNCH_CONNECT_TIMEOUT settings, then the built-in defaults.
// A hostfile line's ssh_port= beats all of them for its host (AgentSpec).
// Pure apart from reading the env registry.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/cmd/cli.h"
#include "launcher/config/job_spec.h"
#include "launcher/config/plan.h"
#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

// Error: an invalid DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING (named) or job
// file policy (the parser already rejects those, so only hand-built specs).
Result<SshOptions> SshOptionsForJob(const JobSpec& job, const CliOptions& cli);

// dsagent's path on the nodes: --agent-path, else DSLAUNCH_AGENT_PATH, else
// the dsagent next to dslaunch (SiblingBinary).
std::string AgentPathFor(const CliOptions& cli);

// dsagent's command line for node `node` (agent/main.cc), durations in whole
// ms rounded up: every launcher, and the per-node form's other nodes.
std::vector<std::string> AgentArgv(const CliOptions& cli, const std::string& coordinator, int node,
                                   const std::string& job_id, const std::string& host, double heartbeat_interval,
                                   double heartbeat_timeout, double connect_timeout);

// What "auto" means: "slurm" for a plan made from a Slurm allocation
// (hostfile_path kSlurmNodelist), else "local" when every host of the plan is
// this machine (IsLocalHost) and not `force_multi`, else "ssh"; any other
// name as given.
std::string ResolveLauncher(const std::string& launcher, const LaunchPlan& plan, bool force_multi = false);

// What MakeSpawner refuses, without making one (the dry run asks too):
// InvalidArgument for a launcher this build cannot provide, --launcher local
// with a host that is not this machine, or launcher_args for a launcher that
// takes none.
Status CheckSpawner(const std::string& launcher, const LaunchPlan& plan,
                    const std::vector<std::string>& launcher_args);

// The spawner for `launcher` ("local", "ssh", "pdsh", "slurm";
// ResolveLauncher's answer). `ssh` is used by the ssh and pdsh spawners,
// `stop_grace` (seconds) by the local and slurm ones, `launcher_args`
// (--launcher_args, already split) by pdsh and slurm only. CheckSpawner's
// errors.
Result<std::unique_ptr<Spawner>> MakeSpawner(const std::string& launcher, const LaunchPlan& plan,
                                             const SshOptions& ssh, double stop_grace,
                                             const std::vector<std::string>& launcher_args = {});

}  // namespace ds
