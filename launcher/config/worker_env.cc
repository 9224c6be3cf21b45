#include "launcher/config/worker_env.h"

#include <algorithm>

#include "common/check.h"

namespace ds {
namespace {

// Environment built in order; Set() replaces an existing name in place so
// every name appears once.
class EnvBuilder {
 public:
  void Set(const std::string& name, const std::string& value) {
    for (auto& kv : env_)
      if (kv.first == name) {
        kv.second = value;
        return;
      }
    env_.emplace_back(name, value);
  }
  void Set(const std::string& name, int value) { Set(name, std::to_string(value)); }
  KeyValues Take() { return std::move(env_); }

 private:
  KeyValues env_;
};

const std::string* Find(const KeyValues& env, const std::string& name) {
  for (const auto& kv : env)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

const std::string* FindHostEnv(const HostEntry& h, const std::string& name) {
  auto it = h.env.find(name);
  return it == h.env.end() ? nullptr : &it->second;
}

bool NonEmpty(const std::string* s) { return s != nullptr && !s->empty(); }

// torchrun's contract, MASTER_ADDR/PORT and DeepSpeed's names for the same.
void SetRankVariables(EnvBuilder& env, const LaunchPlan& plan, const NodePlan& node, int local_rank,
                      const GenerationInfo& gen) {
  const JobSpec& job = plan.job;
  const int local_size = node.num_workers();
  const int num_nodes = static_cast<int>(plan.nodes.size());
  const int rank = node.first_rank + local_rank;
  env.Set("RANK", rank);
  env.Set("LOCAL_RANK", local_rank);
  env.Set("WORLD_SIZE", plan.world_size);
  env.Set("LOCAL_WORLD_SIZE", local_size);
  env.Set("GROUP_RANK", node.node_rank);
  env.Set("GROUP_WORLD_SIZE", num_nodes);
  env.Set("ROLE_RANK", rank);
  env.Set("ROLE_WORLD_SIZE", plan.world_size);
  std::string master_addr = !gen.master_addr.empty()           ? gen.master_addr
                            : !job.network.master_addr.empty() ? job.network.master_addr
                                                               : plan.nodes.front().host.name;
  env.Set("MASTER_ADDR", master_addr);
  env.Set("MASTER_PORT", gen.master_port > 0 ? gen.master_port : job.network.master_port);
  // The rest of torchrun's contract (torch.distributed.is_torchelastic_launched()
  // checks TORCHELASTIC_RUN_ID). The agent adds TORCHELASTIC_ERROR_FILE.
  env.Set("ROLE_NAME", "default");
  env.Set("TORCHELASTIC_RUN_ID", gen.job_id);
  env.Set("TORCHELASTIC_RESTART_COUNT", gen.restart_count);
  env.Set("TORCHELASTIC_MAX_RESTARTS", job.elastic.max_restarts);
  env.Set("TORCHELASTIC_USE_AGENT_STORE", "False");  // our store is not at MASTER_ADDR:MASTER_PORT
  // DeepSpeed's names.
  env.Set("CROSS_RANK", node.node_rank);
  env.Set("CROSS_SIZE", num_nodes);
  env.Set("LOCAL_SIZE", local_size);
}

bool IsInterfaceVariable(const std::string& k) { return k == "NCCL_SOCKET_IFNAME" || k == "GLOO_SOCKET_IFNAME"; }

// Network interface, per variable (the order worker_env.h documents).
void SetInterfaceVariables(EnvBuilder& env, const JobSpec& job, const NodePlan& node, const GenerationInfo& gen,
                           const KeyValues& inherited) {
  for (const char* var : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}) {
    const std::string* v = nullptr;
    if (!job.network.interface.empty()) v = &job.network.interface;
    else if (NonEmpty(FindHostEnv(node.host, var))) v = FindHostEnv(node.host, var);
    else if (NonEmpty(Find(job.env, var))) v = Find(job.env, var);
    else if (NonEmpty(Find(inherited, var))) v = Find(inherited, var);
    else if (!gen.socket_ifname.empty()) v = &gen.socket_ifname;
    if (v != nullptr) env.Set(var, *v);
  }
}

// CUDA_VISIBLE_DEVICES from the node's slots; OMP_NUM_THREADS and
// TORCH_NCCL_ASYNC_ERROR_HANDLING and its older name NCCL_ASYNC_ERROR_HANDLING
// (torchrun's default) unless set.
void SetResourceVariables(EnvBuilder& env, const LaunchPlan& plan, const NodePlan& node, const GenerationInfo& gen,
                          const KeyValues& inherited) {
  if (plan.use_gpus) {
    std::string devices;
    for (int s : node.slots) devices += (devices.empty() ? "" : ",") + std::to_string(s);
    env.Set("CUDA_VISIBLE_DEVICES", devices);
  }
  if (!UserSetEnv(plan.job, node, inherited, "OMP_NUM_THREADS")) {
    env.Set("OMP_NUM_THREADS", std::max(1, gen.cpus_on_node / std::max(1, node.num_workers())));
  }
  // The same switch under both names: torch before 2.2 reads only the old one.
  for (const char* name : {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"})
    if (!UserSetEnv(plan.job, node, inherited, name)) env.Set(name, "1");
}

// dslaunch's own contract.
void SetDslaunchVariables(EnvBuilder& env, const JobSpec& job, const NodePlan& node, const GenerationInfo& gen) {
  env.Set("DSLAUNCH_JOB_ID", gen.job_id);
  if (!gen.run_id.empty()) env.Set("DSLAUNCH_RUN_ID", gen.run_id);
  env.Set("DSLAUNCH_GENERATION", gen.generation);
  env.Set("DSLAUNCH_RESTART_COUNT", gen.restart_count);
  env.Set("DSLAUNCH_HOST", node.host.name);
  if (!gen.store_addr.empty()) env.Set("DSLAUNCH_STORE_ADDR", gen.store_addr);
  if (!gen.store_token.empty()) env.Set("DSLAUNCH_STORE_TOKEN", gen.store_token);
  if (!gen.heartbeat_addr.empty()) env.Set("DSLAUNCH_HEARTBEAT_ADDR", gen.heartbeat_addr);
  if (!job.checkpoint.dir.empty())
    env.Set("DSLAUNCH_CHECKPOINT_DIR", ExpandCheckpointDir(job.checkpoint.dir, node.host.name, node.index));
  if (!job.trainer_yaml.empty()) env.Set("DSLAUNCH_TRAINER_CONFIG", job.trainer_yaml);
}

}  // namespace

bool UserSetEnv(const JobSpec& job, const NodePlan& node, const KeyValues& inherited, const std::string& name) {
  return Find(job.env, name) != nullptr || FindHostEnv(node.host, name) != nullptr || Find(inherited, name) != nullptr;
}

KeyValues WorkerEnv(const LaunchPlan& plan, int node_index, int local_rank, const GenerationInfo& gen,
                  const KeyValues& inherited) {
  DS_CHECK(node_index >= 0 && node_index < static_cast<int>(plan.nodes.size()));
  const NodePlan& node = plan.nodes[node_index];
  DS_CHECK(local_rank >= 0 && local_rank < node.num_workers());
  EnvBuilder env;
  SetRankVariables(env, plan, node, local_rank, gen);
  SetInterfaceVariables(env, plan.job, node, gen, inherited);
  SetResourceVariables(env, plan, node, gen, inherited);
  SetDslaunchVariables(env, plan.job, node, gen);
  // The user's own values: the job's env:, then the host's keys (more
  // specific). The interface variables were resolved above.
  for (const auto& [k, v] : plan.job.env)
    if (!IsInterfaceVariable(k)) env.Set(k, v);
  for (const auto& [k, v] : node.host.env)
    if (!IsInterfaceVariable(k)) env.Set(k, v);
  return env.Take();
}

}  // namespace ds
