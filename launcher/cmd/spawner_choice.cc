#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "common/defaults.h"
#include "common/duration.h"
#include "common/env_registry.h"
#include "common/files.h"
#include "common/netif.h"
#include "launcher/spawn/local_spawner.h"
#include "launcher/spawn/slurm/slurm_allocation.h"
#include "launcher/spawn/slurm/srun_spawner.h"
#include "launcher/spawn/ssh/mpirun_spawner.h"
#include "launcher/spawn/ssh/pdsh_spawner.h"
#include "launcher/cmd/spawner_choice.h"
#include "launcher/spawn/ssh/ssh_spawner.h"

namespace ds {

std::string AgentPathFor(const CliOptions& cli) {
  // cli.agent_path already holds DSLAUNCH_AGENT_PATH when the flag is absent.
  return SiblingBinary("dsagent", "agent", cli.agent_path);
}

std::vector<std::string> AgentArgv(const CliOptions& cli, const std::string& coordinator, int node,
                                   const std::string& job_id, const std::string& host, double heartbeat_interval,
                                   double heartbeat_timeout, double connect_timeout) {
  auto ms = [](double s) { return fmt::format("{}ms", ToMillis(s)); };  // a positive duration never "0ms"
  return {AgentPathFor(cli), "--coordinator", coordinator, "--node-index", std::to_string(node),
          "--job-id", job_id, "--host", host,
          "--heartbeat-interval", ms(heartbeat_interval), "--heartbeat-timeout", ms(heartbeat_timeout),
          "--connect-timeout", ms(connect_timeout),
          // A coordinator that resets or does not answer the connection in
          // time (thousands of agents starting at once) is tried again each
          // second until the coordinator's register deadline.
          "--join-timeout", ms(connect_timeout + kRegisterGrace)};
}

std::string ResolveLauncher(const std::string& launcher, const LaunchPlan& plan, bool force_multi) {
  if (launcher != "auto" && !launcher.empty()) return launcher;
  if (plan.hostfile_path == kSlurmNodelist) return "slurm";
  if (force_multi) return "ssh";
  for (const auto& n : plan.nodes)
    if (!IsLocalHost(n.host.name)) return "ssh";
  return "local";
}

Status CheckSpawner(const std::string& launcher, const LaunchPlan& plan,
                    const std::vector<std::string>& launcher_args) {
  const std::string which = ResolveLauncher(launcher, plan);
  if (!launcher_args.empty() && which != "pdsh" && which != "slurm" && which != "openmpi" && which != "mpich")
    return Status::InvalidArgument(fmt::format(
        "--launcher_args: applies to --launcher pdsh, slurm, openmpi and mpich only, and this job starts its agents "
        "with {}; for ssh set the job file's ssh: section (port, connect_timeout, strict_host_key_checking) or an "
        "ssh config file (DSLAUNCH_SSH_CONFIG)",
        which));
  if (which == "local")
    for (const auto& n : plan.nodes)
      if (!IsLocalHost(n.host.name))
        return Status::InvalidArgument(fmt::format(
            "--launcher local: host '{}' (hostfile line {}) is not this machine", n.host.name, n.host.line));
  const std::vector<std::string> known = {"local", "ssh", "pdsh", "slurm", "openmpi", "mpich"};
  if (std::find(known.begin(), known.end(), which) == known.end())
    return Status::InvalidArgument(fmt::format("--launcher {}: not available in this build", which));
  return Status::OK();
}

Result<std::unique_ptr<Spawner>> MakeSpawner(const std::string& launcher, const LaunchPlan& plan,
                                             const SshOptions& ssh, double stop_grace,
                                             const std::vector<std::string>& launcher_args) {
  DS_RETURN_IF_ERROR(CheckSpawner(launcher, plan, launcher_args));
  const std::string which = ResolveLauncher(launcher, plan);
  if (which == "local") {
    LocalSpawnerOptions o;
    o.stop_grace = stop_grace;
    return std::unique_ptr<Spawner>(std::make_unique<LocalSpawner>(o));
  }
  if (which == "slurm") {
    SrunOptions so;
    so.elastic = plan.job.elastic.max_restarts > 0;
    so.stop_grace = stop_grace + 1.0;  // the agents' own grace first
    so.extra_args = launcher_args;
    return std::unique_ptr<Spawner>(std::make_unique<SrunSpawner>(so));
  }
  if (which == "openmpi" || which == "mpich") {
    MpirunOptions mo;
    mo.flavor = which == "mpich" ? MpiFlavor::kMpich : MpiFlavor::kOpenMpi;
    mo.ssh = ssh;
    mo.as_root = ::geteuid() == 0;
    mo.extra_args = launcher_args;
    return std::unique_ptr<Spawner>(std::make_unique<MpirunSpawner>(mo));
  }
  if (which == "ssh") return MakeSshSpawner(ssh);
  PdshOptions po;  // CheckSpawner left only pdsh
  po.ssh = ssh;
  po.extra_args = launcher_args;
  return MakePdshSpawner(po);
}

Result<SshOptions> SshOptionsForJob(const JobSpec& job, const CliOptions& cli) {
  SshOptions ssh;
  ssh.config_file = EnvString("DSLAUNCH_SSH_CONFIG");
  auto env_policy = ParseHostKeyPolicy(EnvString("DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING"));
  if (!env_policy.ok()) return env_policy.status().Prefixed("DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING");
  ssh.host_key_policy = *env_policy;
  ssh.stop_grace = std::max(1.0, cli.stop_grace + 1.0);
  if (!job.ssh.strict_host_key_checking.empty()) {
    auto policy = ParseHostKeyPolicy(job.ssh.strict_host_key_checking);
    if (!policy.ok()) return policy.status().Prefixed("ssh.strict_host_key_checking");
    ssh.host_key_policy = *policy;
  }
  // cli.connect_timeout already holds DSLAUNCH_CONNECT_TIMEOUT when the flag is absent.
  ssh.connect_timeout = cli.connect_timeout;
  if (!cli.connect_timeout_set && job.ssh.connect_timeout > 0) ssh.connect_timeout = job.ssh.connect_timeout;
  ssh.default_port = cli.ssh_port ? cli.ssh_port : job.ssh.port;
  ssh.fanout = cli.fanout;
  ssh.ship_agent = cli.ship_agent;
  return ssh;
}

}  // namespace ds
