// LaunchPlan: hosts x slots -> node ranks, global ranks, local ranks
// (each worker's environment from them: worker_env.h). Pure and
// deterministic: same inputs, same plan.
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

}  // namespace ds
