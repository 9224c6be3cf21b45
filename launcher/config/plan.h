// LaunchPlan: hosts x slots -> node ranks, global ranks, local ranks and the
// per-rank environment (the torchrun contract plus DeepSpeed's names and
// DSLAUNCH_*). Pure and deterministic: same inputs, same plan.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "launcher/config/job_spec.h"
#include "launcher/config/selection.h"

namespace ds {

struct NodePlan {
  HostEntry host;          // hostfile entry (name, ssh_port, user, per-host env)
  int node_rank = 0;
  int first_rank = 0;      // global rank of local rank 0
  int index = 0;           // position among Candidates() of the job's first plan: stable across
                           //   generations ({node} in checkpoint.dir, the agent's node index)
  std::vector<int> slots;  // device/slot index per local rank (CUDA_VISIBLE_DEVICES where GPUs)
  int num_workers() const { return static_cast<int>(slots.size()); }
};

struct LaunchPlan {
  JobSpec job;
  std::vector<NodePlan> nodes;  // node rank order
  std::vector<NodePlan> standbys;  // selected hosts beyond elastic.max_nodes, in hostfile order;
                                   // node_rank/first_rank -1 until a generation promotes them
  int world_size = 0;
  bool use_gpus = false;        // assign CUDA_VISIBLE_DEVICES per rank
  std::string hostfile_path;    // where the hosts came from ("" = this machine), for messages
};

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

// Fails when no host is selected, procs_per_node exceeds a host's selected
// slots, fewer hosts than elastic.min_nodes are selected, the job's
// core_list is not a CPU list ("bind_core_list '3-1': '3-1': a range must
// not end below its start; expected a list like 0-3,8-11") or, with
// bind_cores, names fewer cores than a host has workers.
Result<LaunchPlan> MakePlan(const std::vector<SelectedHost>& hosts, const JobSpec& job, bool use_gpus);

// Every host that may run workers: the nodes, then the standbys.
std::vector<NodePlan> Candidates(const LaunchPlan& plan);

// `plan` again on the candidates with keep[i] == true (the reachable ones at
// an elastic start, the survivors at a restart), in candidate order: the
// first elastic.max_nodes of them are the nodes (so standbys step in for lost
// nodes), the rest stay standbys; node ranks dense, global ranks and
// WORLD_SIZE over their slots. Error (naming the counts) when fewer than
// elastic.min_nodes remain. Pure.
Result<LaunchPlan> PlanOnNodes(const LaunchPlan& plan, const std::vector<bool>& keep);

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
