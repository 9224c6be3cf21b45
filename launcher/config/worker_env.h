// The environment dslaunch gives one worker: torchrun's contract (RANK,
// WORLD_SIZE, MASTER_ADDR, ...), DeepSpeed's names for the same, the network
// interface, CUDA_VISIBLE_DEVICES and OMP_NUM_THREADS, and DSLAUNCH_*, with
// the user's own values (job env:, hostfile per-host keys) over them. The
// job-wide variables gathered from env files are job_env.h's; the agent adds
// what only the node knows (agent/node_facts.h). Pure.
#pragma once

#include <string>

#include "common/env_registry.h"
#include "launcher/config/plan.h"

namespace ds {

// What a generation knows that the static plan does not.
struct GenerationInfo {
  std::string job_id;
  std::string run_id;           // DSLAUNCH_RUN_ID: this dslaunch invocation's ("" = not set)
  int generation = 0;
  int restart_count = 0;
  std::string master_addr;      // node rank 0's reachable address
  int master_port = 0;
  std::string store_addr;       // host:port
  std::string store_token;
  std::string heartbeat_addr;   // per node: the agent's endpoint (filled by the agent)
  std::string socket_ifname;    // per node: interface routing to master (filled by the agent)
  int cpus_on_node = 0;         // for OMP_NUM_THREADS
};

// The environment dslaunch adds for one worker, in a stable order. Values
// the user set (job env:, hostfile per-host keys) win over detected ones
// (e.g. NCCL_SOCKET_IFNAME). `inherited` is the environment the worker would
// otherwise inherit, used to decide "unless the user set it".
//   NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME (each on its own): network.interface
//     > hostfile per-host key > job env: > inherited > gen.socket_ifname;
//     omitted when all are empty.
//   CUDA_VISIBLE_DEVICES (only when plan.use_gpus): the node's selected slots,
//     comma-separated, the same for every worker of the node (DeepSpeed's
//     convention: workers pick their device with LOCAL_RANK).
//   OMP_NUM_THREADS: max(1, gen.cpus_on_node / local workers) unless set in
//     job env:, the hostfile or `inherited`.
//   MASTER_ADDR: gen.master_addr > network.master_addr > node rank 0's host.
//   MASTER_PORT: gen.master_port > network.master_port (0 = not reserved yet).
//   ROLE_NAME=default, TORCHELASTIC_RUN_ID (the job id), _RESTART_COUNT,
//     _MAX_RESTARTS, _USE_AGENT_STORE=False: the rest of torchrun's contract.
//   TORCH_NCCL_ASYNC_ERROR_HANDLING=1 unless set (torchrun's default).
// Whether the user chose `name` for workers of `node`: in the job's env:
// (with the env files and forwarded variables), the host's hostfile keys,
// or `inherited` (the environment the worker would otherwise inherit).
bool UserSetEnv(const JobSpec& job, const NodePlan& node, const KeyValues& inherited, const std::string& name);

KeyValues WorkerEnv(const LaunchPlan& plan, int node_index, int local_rank,
                  const GenerationInfo& gen, const KeyValues& inherited);

}  // namespace ds
