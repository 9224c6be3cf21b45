// What the node adds to a worker's environment, on top of what the
// coordinator sent (launcher/config/worker_env.h builds that part: ranks,
// MASTER_*, the user's values). Only the node knows these: the agent's own
// environment (the worker inherits it), the heartbeat token, the snapshot
// hand-off directory, the torch error file, OMP_NUM_THREADS from the bound
// cores, rank 0's own MASTER_PORT behind the store relay, the dslaunch
// Python package on PYTHONPATH and the interface that routes to
// MASTER_ADDR here (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME). Pure.
#pragma once

#include <string>

#include "common/env_registry.h"

namespace ds {

struct NodeEnvInputs {
  KeyValues inherited;         // the agent's environment, the lowest precedence
  bool drop_step_variables = false;  // an srun step's agent: its SLURM_STEP_* and the like are not the workers'
  KeyValues assigned;          // the worker's environment from the coordinator (the Assign)
  std::string heartbeat_token;
  std::string snapshot_dir;    // "" = no snapshot hand-off
  std::string error_file;      // TORCHELASTIC_ERROR_FILE; "" = none (an inherited one is removed)
  int omp_threads = 0;         // > 0: OMP_NUM_THREADS from the worker's bound cores
  int rank0_store_port = 0;    // > 0: this is rank 0 behind the store relay, its store's own port
  std::string python_dir;      // the dslaunch package's directory, appended to PYTHONPATH; "" = not wanted
  std::string ifname;          // the interface routing to MASTER_ADDR; used when nobody set the variables
};

// The worker's whole environment, each name once, in first-set order.
KeyValues NodeWorkerEnv(const NodeEnvInputs& in);

}  // namespace ds
