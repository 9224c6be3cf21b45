#include "launcher/coordinator/assign_builder.h"

#include "common/duration.h"

namespace ds {

msg::Assign BuildAssign(const LaunchPlan& plan, int node_index, const msg::Register& facts,
                        const AssignContext& ctx) {
  const NodePlan& node = plan.nodes.at(node_index);
  GenerationInfo gen = ctx.gen;
  gen.heartbeat_addr = facts.heartbeat_addr;
  gen.cpus_on_node = static_cast<int>(facts.cpus);

  msg::Assign a;
  a.generation = static_cast<uint32_t>(ctx.gen.generation);
  a.argv = ctx.argv;
  a.working_dir = plan.job.working_dir;
  a.master_addr = ctx.gen.master_addr;
  // Checked conversions: the ranges (common/duration.h) keep these exact.
  a.stop_grace_ms = ToMillis32(ctx.stop_grace);
  a.hang_timeout_ms = ToMillis32(ctx.hang_timeout);
  // DeepSpeed's per-worker behaviour, carried out by the agent.
  a.local_rank_arg = plan.job.local_rank_arg ? 1 : 0;
  a.local_rank_at = plan.job.local_rank_at;
  a.bind_cores = plan.job.bind_cores ? 1 : 0;
  a.core_list = plan.job.bind_cores ? plan.job.core_list : "";
  a.omp_from_binding = plan.job.bind_cores && !UserSetEnv(plan.job, node, facts.env, "OMP_NUM_THREADS") ? 1 : 0;
  if (plan.job.pty) {
    a.pty_columns = static_cast<uint32_t>(plan.job.pty_window.columns);
    a.pty_rows = static_cast<uint32_t>(plan.job.pty_window.rows);
  }
  // A terminal needs a TERM; over ssh the agent has none.
  const bool set_term = plan.job.pty && !UserSetEnv(plan.job, node, facts.env, "TERM");
  a.preload = plan.job.python.preload;
  for (int lr = 0; lr < node.num_workers(); ++lr) {
    msg::WorkerSpec w;
    w.rank = node.first_rank + lr;
    w.local_rank = lr;
    w.env = WorkerEnv(plan, node_index, lr, gen, facts.env);
    if (set_term) w.env.emplace_back("TERM", plan.job.pty_window.term);
    a.workers.push_back(std::move(w));
  }
  return a;
}

std::vector<std::string> WorkerArgv(const JobSpec& job, const std::string& dstrain_path) {
  if (!job.trainer_yaml.empty()) return {dstrain_path};
  return job.command;
}

}  // namespace ds
