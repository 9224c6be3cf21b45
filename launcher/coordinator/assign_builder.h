// BuildAssign: the Assign message for one node of one generation: the worker
// command, and per worker the environment from ds::WorkerEnv (plan.h) with
// the node's own facts (cpus, heartbeat endpoint, inherited settings such as
// a NCCL_SOCKET_IFNAME the agent's environment already has). The interface
// variables are left to the agent when nobody set them: only the node knows
// which of its interfaces routes to MASTER_ADDR. Pure function.
#pragma once

#include <string>
#include <vector>

#include "common/defaults.h"
#include "common/protocol.h"
#include "launcher/config/plan.h"

namespace ds {

struct AssignContext {
  std::string job_id;
  int generation = 0;
  int restart_count = 0;
  std::string master_addr;
  int master_port = 0;
  std::string store_addr;
  std::string store_token;
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
