#include "launcher/cmd/plan_from_cli.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include <filesystem>

#include "common/env_registry.h"
#include "launcher/config/job_env.h"

namespace ds {
namespace {

// The working directory made absolute (workers on every node start there),
// then the environment the job gives every worker (launcher/config/job_env.h:
// forwarded variables, env files, env:). At plan time so --dry-run shows
// what runs.
Status ResolveWorkerSettings(JobSpec& job, const MachineFacts& local) {
  job.working_dir = AbsoluteWorkingDir(job.working_dir, local.cwd);
  return ResolveJobEnv(job, local.env);
}

}  // namespace

MachineFacts DetectLocalMachine() {
  MachineFacts f;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) f.cpus = std::max(1, CPU_COUNT(&set));
  else f.cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  if (DIR* d = opendir("/proc/driver/nvidia/gpus")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++f.gpus;
    closedir(d);
  }
  std::error_code ec;
  f.cwd = std::filesystem::current_path(ec).string();
  if (f.cwd.empty()) f.cwd = "/";
  f.env = ProcessEnvironment();
  return f;
}

Result<JobSpec> JobFromCli(const CliOptions& cli, bool require_job) {
  JobSpec job;
  if (!cli.job_file.empty()) {
    DS_ASSIGN_OR_RETURN(job, LoadJobFile(cli.job_file));
  } else if (cli.command_after_dashdash) {
    job.command = cli.command;
  } else if (!cli.command.empty()) {
    job = JobSpecFromCommand(cli.command);
  } else if (require_job) {
    return Status::InvalidArgument("expected a job file (job.yaml), a script (train.py ...) or '-- command ...'");
  }
  if (!cli.master_addr.empty()) job.network.master_addr = cli.master_addr;
  if (cli.master_port != 0) job.network.master_port = cli.master_port;
  if (!cli.log_dir.empty()) job.log_dir = cli.log_dir;
  if (cli.max_restarts >= 0) job.elastic.max_restarts = cli.max_restarts;
  return job;
}

Result<LaunchPlan> PlanFromCli(const CliOptions& cli, const MachineFacts& local) {
  DS_ASSIGN_OR_RETURN(JobSpec job, JobFromCli(cli));
  DS_RETURN_IF_ERROR(ResolveWorkerSettings(job, local));
  Hostfile hostfile;
  if (!cli.hostfile.empty()) {
    DS_ASSIGN_OR_RETURN(hostfile, LoadHostfile(cli.hostfile));
  } else {
    hostfile = LocalHostfile(local.cpus, local.gpus);
    if (local.gpus == 0)
      hostfile.hosts[0].slots = std::max({hostfile.hosts[0].slots, cli.selection.num_gpus, job.procs_per_node});
  }
  DS_ASSIGN_OR_RETURN(std::vector<SelectedHost> hosts, SelectHosts(hostfile, cli.selection));
  DS_ASSIGN_OR_RETURN(LaunchPlan plan, MakePlan(hosts, job, local.gpus > 0));
  DS_RETURN_IF_ERROR(CheckTrainerForWorld(plan.job, plan.world_size));
  plan.hostfile_path = cli.hostfile;
  return plan;
}

}  // namespace ds
