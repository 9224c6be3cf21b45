// PlanFromCli: turns parsed command-line options into a LaunchPlan: reads the
// job file (or builds the job from the command), reads the hostfile (or
// describes this machine), applies --include/--exclude/--num_nodes/--num_gpus
// and the command-line overrides (--master_addr, --master_port, --log-dir),
// makes the working directory absolute and gathers the workers' environment
// (forwarded variables, .deepspeed_env, .dslaunch_env, env:; see
// launcher/config/job_env.h), then checks a trainer: section's batch sizes
// against the plan's world size.
// Reads files only; starts nothing. Errors are the parsers' own messages.
#pragma once

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/config/plan.h"

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
// is, or a script (a `.py` runs as python3 -u). Command-line values for
// master_addr, master_port, log_dir and max_restarts override the job file's.
// With `require_job` false (dslaunch check), no job at all is a default job.
Result<JobSpec> JobFromCli(const CliOptions& cli, bool require_job = true);

// The plan for `cli`. Without --hostfile the only host is this machine with
// one slot per GPU (else per core), grown to --num_gpus / procs_per_node when
// those ask for more workers than cores (like torchrun --nproc_per_node).
// GPUs are assigned (CUDA_VISIBLE_DEVICES) when this machine has GPUs.
Result<LaunchPlan> PlanFromCli(const CliOptions& cli, const MachineFacts& local);

}  // namespace ds
