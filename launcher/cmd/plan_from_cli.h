// PlanFromCli: turns parsed command-line options into a LaunchPlan: reads the
// job file (or builds the job from the command), reads the hostfile (--hostfile,
// else DSLAUNCH_DEFAULT_HOSTFILE when it exists, else this machine), applies
// --include/--exclude/--num_nodes/--nproc_per_node and the command-line
// overrides (--master_addr, --master_port, --log-dir, elastic bounds, binding),
// makes the working directory absolute and gathers the workers' environment
// (forwarded variables, .deepspeed_env, .dslaunch_env, env:; see
// launcher/config/job_env.h), then checks a trainer: section's batch sizes
// against the plan's world size.
// Reads files only; starts nothing. Errors are the parsers' own messages.
#pragma once

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/config/plan.h"
#include "launcher/spawn/slurm/slurm_allocation.h"

namespace ds {

// What the launcher knows about the machine it runs on.
struct MachineFacts {
  int cpus = 1;  // usable cores (affinity mask)
  int gpus = 0;  // NVIDIA GPUs (/proc/driver/nvidia/gpus entries; 0 without a driver)
  std::string cwd = "/";  // the launcher's current directory (absolute)
  std::vector<std::pair<std::string, std::string>> env;  // the launcher's environment
};

// Counts this machine's usable cores and GPUs; takes the current directory
// and the environment.
MachineFacts DetectLocalMachine();

// The job the options describe: the job file, or the command after `--` as
// is, or a script (a `.py` runs as PYTHON_EXEC -u, -m as PYTHON_EXEC -u -m,
// --no-python as is). local_rank_arg is set for DeepSpeed's form only: a .py
// script with --deepspeed or --deepspeed_config among its arguments, unless
// --no_local_rank (which also turns a job file's local_rank_arg off).
// Command-line values for master_addr, master_port, log_dir, max_restarts,
// the elastic bounds and core binding override the job file's;
// --elastic_training makes max_restarts 100 (DeepSpeed's elastic agent)
// unless --max_restarts or the job file's (above 0) says otherwise;
// --rdzv-backend etcd's endpoint becomes coordinator.etcd. Error when the
// merged elastic min_nodes exceeds max_nodes, or when both the flags and the
// job file's coordinator: ask for failover. With `require_job`
// false (dslaunch check), no job at all is a default job.
Result<JobSpec> JobFromCli(const CliOptions& cli, bool require_job = true);

// Without a hostfile, at most this many workers on this machine: far beyond
// any machine's GPUs or cores, low enough that a typo (100000) is an error
// rather than a fork storm.
inline constexpr int kMaxLocalWorkers = 4096;

// What the plan was made from, for --dry-run and the logs.
struct PlanNotes {
  std::string hostfile_source;       // "--hostfile", "DSLAUNCH_DEFAULT_HOSTFILE", or "" (this machine)
  std::vector<std::string> notices;  // lines for stderr (without "dslaunch: "), e.g. a hostfile's
                                     //   ignored max_slots=
};

// The hostfile to read: --hostfile, else DSLAUNCH_DEFAULT_HOSTFILE (DeepSpeed's
// /job/hostfile) when it is a regular file and --launcher is not local, else
// "" (this machine). `source` (optional) gets which of the two it was.
std::string HostfilePath(const CliOptions& cli, std::string* source = nullptr);

// A command's stdout, or an error naming it (CaptureOk): how PlanFromCli
// asks scontrol by default.
Result<std::string> RunCommandForOutput(const std::vector<std::string>& argv);

// Whether the hosts come from a Slurm allocation: no --hostfile, and
// --launcher slurm, or auto with SLURM_JOB_ID in `local.env`.
bool UseSlurmAllocation(const CliOptions& cli, const MachineFacts& local);

// The plan for `cli`. Inside a Slurm allocation (UseSlurmAllocation) the
// hosts are its nodes (SlurmHostfile, asking scontrol through `run`,
// default RunCommandForOutput). Without a hostfile (neither --hostfile nor an existing
// DSLAUNCH_DEFAULT_HOSTFILE, which --launcher local skips) the only host is
// this machine with one slot per GPU (else per core), grown to --num_gpus /
// procs_per_node when those ask for more workers than cores (like torchrun
// --nproc_per_node), at most kMaxLocalWorkers; --nproc_per_node auto/gpu/cpu
// pick GPUs-else-cores / GPUs (error without any) / cores. GPUs are assigned
// (CUDA_VISIBLE_DEVICES) when this machine has GPUs, except for cpu.
// `notes` (may be null) receives where the hosts came from and the notices
// (among them: a job file's coordinator: is checked but not acted on yet).
// In the per-node form (`per_node_nodes` > 0, launcher/cmd/per_node.h) the
// hosts are node0..node<N-1>, each with this machine's slots (every node
// runs the same command, as with torchrun).
Result<LaunchPlan> PlanFromCli(const CliOptions& cli, const MachineFacts& local, PlanNotes* notes = nullptr,
                               const CommandOutput& run = nullptr, int per_node_nodes = 0);

}  // namespace ds
