// What a Slurm allocation says about its nodes, for a job started inside it
// (sbatch, salloc: SLURM_JOB_ID is set) without a hostfile:
//   nodes    SLURM_JOB_NODELIST expanded by `scontrol show hostnames`, in order;
//   address  each node's NodeAddr (`scontrol show node -o LIST`), which may
//            differ from its name (the coordinator routes to the first);
//   slots    SLURM_NTASKS_PER_NODE when set (--ntasks-per-node), else the
//            node's GPUs (SLURM_GPUS_ON_NODE, --gpus-per-node), else the
//            tasks Slurm placed per node (SLURM_TASKS_PER_NODE, "2(x3),1"),
//            else 1.
// The scontrol calls go through `run` (argv -> stdout, or an error naming
// the command), so the logic is tested without Slurm.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "launcher/config/hostfile.h"

namespace ds {

// The Hostfile::path (and LaunchPlan::hostfile_path) of a plan made from an allocation.
inline constexpr const char* kSlurmNodelist = "SLURM_JOB_NODELIST";

struct SlurmEnv {
  std::string job_id;          // SLURM_JOB_ID
  std::string nodelist;        // SLURM_JOB_NODELIST, e.g. "w[1-3],x7"
  std::string ntasks_per_node; // SLURM_NTASKS_PER_NODE
  std::string tasks_per_node;  // SLURM_TASKS_PER_NODE
  std::string gpus_on_node;    // SLURM_GPUS_ON_NODE
};

// From an environment (MachineFacts::env: the launcher's own).
SlurmEnv SlurmEnvFrom(const std::vector<std::pair<std::string, std::string>>& env);

// Slurm's count lists: "2(x3),1" -> {2, 2, 2, 1}. InvalidArgument names `what`.
Result<std::vector<int>> ExpandSlurmCounts(const std::string& text, const std::string& what);

using CommandOutput = std::function<Result<std::string>(const std::vector<std::string>& argv)>;

// The allocation's nodes as a hostfile (path "SLURM_JOB_NODELIST", HostEntry
// line = position in the list, addr = NodeAddr when it differs from the name). Errors name the variable
// or the command and what was expected.
Result<Hostfile> SlurmHostfile(const SlurmEnv& env, const CommandOutput& run);

}  // namespace ds
