// BuildAssign: the Assign message for one node of one generation: the worker
// command, and per worker the environment from ds::WorkerEnv
// (launcher/config/worker_env.h) with the node's own facts (cpus, heartbeat
// endpoint, inherited settings such as a NCCL_SOCKET_IFNAME the agent's
// environment already has). The interface
// variables are left to the agent when nobody set them: only the node knows
// which of its interfaces routes to MASTER_ADDR. DeepSpeed's per-worker
// options (--local_rank=N, core binding, OMP_NUM_THREADS from the cores'
// slice unless the user set it) travel as Assign flags: only the node knows
// its CPUs. Pure function.
#pragma once

#include <string>
#include <vector>

#include "common/defaults.h"
#include "launcher/config/worker_env.h"
#include "wire/protocol.h"

namespace ds {

// What an Assign needs beyond the plan and the node's Register: the
// generation's facts (their per-node fields, heartbeat_addr and
// cpus_on_node, come from the node's facts), the command and the timing.
struct AssignContext {
  GenerationInfo gen;
  std::vector<std::string> argv;
  double stop_grace = kDefaultStopGrace;
  double hang_timeout = kDefaultHangTimeout;
};

msg::Assign BuildAssign(const LaunchPlan& plan, int node_index, const msg::Register& facts,
                        const AssignContext& ctx);

// The worker command: the job's command, or for trainer jobs `dstrain_path`
// (DSLAUNCH_TRAINER_CONFIG carries the YAML in the environment).
std::vector<std::string> WorkerArgv(const JobSpec& job, const std::string& dstrain_path);

}  // namespace ds
