#include "launcher/cmd/plan_from_cli.h"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/env_registry.h"
#include "common/log.h"
#include "common/strings.h"
#include "launcher/cluster/command_runner.h"
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

// DeepSpeed's elastic agent restarts up to this often (--elastic_training).
constexpr int kDeepSpeedElasticRestarts = 100;

// DeepSpeed's script form: a .py run by the interpreter with --deepspeed or
// --deepspeed_config among its arguments; its workers get --local_rank=N.
bool IsDeepSpeedScript(const CliOptions& cli) {
  const auto& c = cli.command;
  if (cli.module || cli.no_python || cli.command_after_dashdash || c.empty()) return false;
  if (c[0].size() <= 3 || !c[0].ends_with(".py")) return false;
  return std::any_of(c.begin() + 1, c.end(), [](const std::string& a) {
    return a == "--deepspeed" || a == "--deepspeed_config" || StartsWith(a, "--deepspeed_config=");
  });
}

// The command line's elastic bounds and restarts over the job file's.
Status MergeElastic(const CliOptions& cli, ElasticOptions& el) {
  if (cli.elastic_min_nodes > 0) {
    el.min_nodes = cli.elastic_min_nodes;
    el.min_nodes_set = true;
  }
  if (cli.elastic_max_nodes > 0) el.max_nodes = cli.elastic_max_nodes;
  if (el.max_nodes > 0 && el.min_nodes > el.max_nodes)
    return Status::InvalidArgument(fmt::format(
        "elastic: min_nodes ({}) is more than max_nodes ({}) once the command line's bounds "
        "(--nnodes MIN:MAX, --min_elastic_nodes, --max_elastic_nodes) replace the job file's",
        el.min_nodes, el.max_nodes));
  if (cli.max_restarts >= 0) el.max_restarts = cli.max_restarts;
  else if (cli.elastic_training && el.max_restarts == 0) el.max_restarts = kDeepSpeedElasticRestarts;
  return Status::OK();
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// torchrun's --rdzv-backend etcd --rdzv-endpoint: the coordinator's etcd,
// unless the job file has a coordinator: section (then both are named).
Status MergeCoordinator(const CliOptions& cli, CoordinatorSpec& spec) {
  if (cli.coordinator_etcd.empty()) return Status::OK();
  if (spec.on())
    return Status::InvalidArgument(fmt::format(
        "{} and the job file's coordinator: ({}) both set the coordinator's failover; give one of them (the job "
        "file's section can list several endpoints and TLS files)",
        cli.coordinator_etcd_flags, spec.at));
  spec.etcd = cli.coordinator_etcd;
  spec.at = spec.etcd_at = cli.coordinator_etcd_flags;
  return Status::OK();
}

// This machine as the only host, sized by --nproc_per_node (a number, auto,
// gpu or cpu) or the job's procs_per_node. `use_gpus` turns false for cpu.
Result<Hostfile> LocalHosts(const CliOptions& cli, const MachineFacts& local, const JobSpec& job, bool& use_gpus) {
  Hostfile hf = LocalHostfile(local.cpus, local.gpus);
  int& slots = hf.hosts[0].slots;  // GPUs if any, else cores: what auto means
  if (cli.nproc_mode == "gpu" && local.gpus == 0)
    return Status::InvalidArgument(cli.selection.num_gpus_flag + " gpu: no GPU visible on this machine "
                                   "(/proc/driver/nvidia/gpus lists none); use cpu, auto or a number");
  if (cli.nproc_mode == "cpu") {
    slots = local.cpus;
    use_gpus = false;
  }
  if (!cli.nproc_mode.empty()) return hf;
  if (cli.selection.num_gpus > kMaxLocalWorkers)
    return Status::InvalidArgument(fmt::format(
        "{}: expected an integer between 1 and {} without a hostfile (workers on this machine), got '{}'",
        cli.selection.num_gpus_flag, kMaxLocalWorkers, cli.selection.num_gpus));
  if (local.gpus == 0) slots = std::max({slots, cli.selection.num_gpus, job.procs_per_node});
  return hf;
}

// --local-ranks-filter naming a local rank that no node (standbys included)
// has would silently show nothing of it: an error naming what the nodes have.
Status CheckLocalRanksFilter(const std::vector<int>& filter, const LaunchPlan& plan) {
  int most = 0;
  for (const auto* nodes : {&plan.nodes, &plan.standbys})
    for (const NodePlan& n : *nodes) most = std::max(most, n.num_workers());
  std::vector<std::string> missing, given;
  for (int r : filter) {
    given.push_back(std::to_string(r));
    if (r >= most) missing.push_back(std::to_string(r));
  }
  if (missing.empty()) return Status::OK();
  return Status::InvalidArgument(fmt::format(
      "--local-ranks-filter {}: no node has local rank{} {} (the most a node has is {}: local rank{} {})",
      fmt::join(given, ","), missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), most, most == 1 ? "" : "s",
      most == 1 ? "0" : fmt::format("0-{}", most - 1)));
}

}  // namespace

Result<std::string> RunCommandForOutput(const std::vector<std::string>& argv) {
  auto runner = MakeProcessRunner();
  return CaptureOk(*runner, argv);
}

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
  const ScriptLaunch how{.python = cli.python_exec, .module = cli.module, .no_python = cli.no_python};
  if (!cli.job_file.empty()) {
    DS_ASSIGN_OR_RETURN(job, LoadJobFile(cli.job_file));
  } else if (cli.command_after_dashdash && !cli.module) {
    job.command = cli.command;
  } else if (!cli.command.empty()) {
    job = JobSpecFromCommand(cli.command, how);
    job.local_rank_arg = IsDeepSpeedScript(cli);
  } else if (require_job) {
    return Status::InvalidArgument("expected a job file (job.yaml), a script (train.py ...) or '-- command ...'");
  }
  if (cli.no_local_rank) job.local_rank_arg = false;
  if (!cli.master_addr.empty()) job.network.master_addr = cli.master_addr;
  if (cli.master_port != 0) job.network.master_port = cli.master_port;
  if (!cli.log_dir.empty()) job.log_dir = cli.log_dir;
  if (cli.pty) job.pty = true;
  if (cli.metrics_port >= 0) job.metrics_port = cli.metrics_port;
  if (!cli.metrics_addr.empty()) job.metrics_addr = cli.metrics_addr;
  if (cli.progress_interval >= 0) job.progress_interval = cli.progress_interval;
  DS_RETURN_IF_ERROR(MergeElastic(cli, job.elastic));
  DS_RETURN_IF_ERROR(MergeCoordinator(cli, job.coordinator));
  if (cli.bind_cores) job.bind_cores = true;
  if (!cli.bind_core_list.empty()) job.core_list = cli.bind_core_list;  // checked by MakePlan
  return job;
}

std::string HostfilePath(const CliOptions& cli, std::string* source) {
  if (!cli.hostfile.empty()) {
    if (source) *source = "--hostfile";
    return cli.hostfile;
  }
  // DeepSpeed's default hostfile, used when it exists (a local launch never reads one).
  if (cli.launcher != "local" && !cli.default_hostfile.empty() && IsRegularFile(cli.default_hostfile)) {
    if (source) *source = "DSLAUNCH_DEFAULT_HOSTFILE";
    return cli.default_hostfile;
  }
  return "";
}

bool UseSlurmAllocation(const CliOptions& cli, const MachineFacts& local) {
  if (!cli.hostfile.empty()) return false;
  return cli.launcher == "slurm" || (cli.launcher == "auto" && !SlurmEnvFrom(local.env).job_id.empty());
}

Result<LaunchPlan> PlanFromCli(const CliOptions& cli, const MachineFacts& local, PlanNotes* notes_out,
                               const CommandOutput& run, int per_node_nodes) {
  PlanNotes notes;
  DS_ASSIGN_OR_RETURN(JobSpec job, JobFromCli(cli));
  DS_RETURN_IF_ERROR(ResolveWorkerSettings(job, local));
  const bool slurm = per_node_nodes == 0 && UseSlurmAllocation(cli, local);
  const std::string path =
      slurm ? kSlurmNodelist : per_node_nodes > 0 ? "" : HostfilePath(cli, &notes.hostfile_source);
  Hostfile hostfile;
  bool use_gpus = local.gpus > 0;
  if (per_node_nodes > 0) {
    notes.hostfile_source = "the per-node form";
    job.network.master_port = 0;  // --master_port is the rendezvous (node 0's coordinator), not the workers' store
    DS_ASSIGN_OR_RETURN(Hostfile self, LocalHosts(cli, local, job, use_gpus));
    for (int i = 0; i < per_node_nodes; ++i) {
      HostEntry h = self.hosts[0];
      h.name = "node" + std::to_string(i);
      h.line = i + 1;
      hostfile.hosts.push_back(std::move(h));
    }
  } else if (slurm) {
    notes.hostfile_source = "the Slurm allocation";
    DS_ASSIGN_OR_RETURN(hostfile, SlurmHostfile(SlurmEnvFrom(local.env), run ? run : RunCommandForOutput));
  } else if (!path.empty()) {
    DS_ASSIGN_OR_RETURN(hostfile, LoadHostfile(path));
    notes.notices = hostfile.notices;
  } else {
    DS_ASSIGN_OR_RETURN(hostfile, LocalHosts(cli, local, job, use_gpus));
  }
  DS_LOG(Info, Init) << "hostfile: "
                     << (path.empty() ? std::string("none, this machine") : path + " (" + notes.hostfile_source + ")");
  DS_ASSIGN_OR_RETURN(std::vector<SelectedHost> hosts, SelectHosts(hostfile, cli.selection));
  DS_ASSIGN_OR_RETURN(LaunchPlan plan, MakePlan(hosts, job, use_gpus));
  DS_RETURN_IF_ERROR(CheckTrainerForWorld(plan.job, plan.world_size));
  if (!cli.local_ranks_filter.empty()) DS_RETURN_IF_ERROR(CheckLocalRanksFilter(cli.local_ranks_filter, plan));
  plan.hostfile_path = path;
  const CoordinatorSpec& co = plan.job.coordinator;
  DS_RETURN_IF_ERROR(CheckReplicasFit(co, plan.nodes.size()));
  if (!co.etcd.empty() && !StartsWith(co.at, "--"))  // the flags' own notice says it (cli_compat.cc)
    notes.notices.push_back(co.at + ": coordinator.etcd: " +
                            (co.standbys == 0 ? std::string(kEtcdNotYet)
                                              : fmt::format("the job's state is kept in that etcd; a standby "
                                                            "coordinator on each of the first {} host(s) takes the "
                                                            "job over if this dslaunch is lost, its workers running "
                                                            "on meanwhile", co.standbys)));
  if (co.replicas > 0)
    notes.notices.push_back(fmt::format(
        "{}: coordinator.replicas: the job's own etcd: a member and a standby coordinator on each of the first {} "
        "hosts; the job goes on if this dslaunch or any one of those hosts is lost",
        co.replicas_at.empty() ? co.at : co.replicas_at, co.replicas));
  if (notes_out) *notes_out = std::move(notes);
  return plan;
}

}  // namespace ds
