#include "launcher/config/plan.h"

#include <fmt/format.h>

#include "common/check.h"
#include "common/cpu_binding.h"

namespace ds {
Result<LaunchPlan> MakePlan(const std::vector<SelectedHost>& hosts, const JobSpec& job, bool use_gpus) {
  if (hosts.empty()) return Status::InvalidArgument("no hosts selected");
  const ElasticOptions& el = job.elastic;
  if (el.min_nodes > static_cast<int>(hosts.size()))
    return Status::InvalidArgument("elastic.min_nodes is " + std::to_string(el.min_nodes) + " but only " +
                                   std::to_string(hosts.size()) + " host(s) are selected");
  size_t listed_cores = 0;  // --bind_core_list: checked here, applied by each agent
  if (!job.core_list.empty()) {
    auto cores = ParseCpuList(job.core_list);
    if (!cores.ok())
      return Status::InvalidArgument(fmt::format("bind_core_list '{}': {}; expected {}", job.core_list,
                                                 cores.status().message(), kCoreListForm));
    listed_cores = cores->size();
  }
  LaunchPlan plan;
  plan.job = job;
  plan.use_gpus = use_gpus;
  for (const SelectedHost& sel : hosts) {
    NodePlan node;
    node.host = sel.host;
    node.slots = sel.slots;
    node.index = static_cast<int>(plan.nodes.size() + plan.standbys.size());
    if (node.slots.empty())
      return Status::InvalidArgument("host '" + sel.host.name + "': no slots selected");
    if (job.procs_per_node > 0) {
      if (job.procs_per_node > static_cast<int>(node.slots.size()))
        return Status::InvalidArgument(
            fmt::format("{}procs_per_node is {} but host '{}'{} has {} selected slot(s)",
                        job.procs_per_node_at.empty() ? "" : job.procs_per_node_at + ": ", job.procs_per_node,
                        sel.host.name, sel.host.line > 0 ? fmt::format(" (hostfile line {})", sel.host.line) : "",
                        node.slots.size()));
      node.slots.resize(job.procs_per_node);
    }
    if (job.bind_cores && listed_cores > 0 && listed_cores < node.slots.size())
      return Status::InvalidArgument(fmt::format(
          "bind_core_list '{}' has {} core{} for the {} workers of host '{}': each worker needs at least one core",
          job.core_list, listed_cores, listed_cores == 1 ? "" : "s", node.slots.size(), sel.host.name));
    bool standby = el.max_nodes > 0 && static_cast<int>(plan.nodes.size()) >= el.max_nodes;
    if (standby) {
      node.node_rank = -1;
      node.first_rank = -1;
      plan.standbys.push_back(std::move(node));
      continue;
    }
    node.node_rank = static_cast<int>(plan.nodes.size());
    node.first_rank = plan.world_size;
    plan.world_size += node.num_workers();
    plan.nodes.push_back(std::move(node));
  }
  return plan;
}

std::vector<NodePlan> Candidates(const LaunchPlan& plan) {
  std::vector<NodePlan> all = plan.nodes;
  all.insert(all.end(), plan.standbys.begin(), plan.standbys.end());
  return all;
}

Result<LaunchPlan> PlanOnNodes(const LaunchPlan& plan, const std::vector<bool>& keep) {
  const std::vector<NodePlan> candidates = Candidates(plan);
  DS_CHECK(keep.size() == candidates.size());
  std::vector<SelectedHost> hosts;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (keep[i]) hosts.push_back(SelectedHost{candidates[i].host, candidates[i].slots});
  const int min_nodes = plan.job.elastic.min_nodes;
  if (static_cast<int>(hosts.size()) < min_nodes)
    return Status::Unavailable(fmt::format("{} of {} hosts reachable, elastic.min_nodes is {}", hosts.size(),
                                           candidates.size(), min_nodes));
  DS_ASSIGN_OR_RETURN(LaunchPlan out, MakePlan(hosts, plan.job, plan.use_gpus));
  out.hostfile_path = plan.hostfile_path;
  // Candidates keep their index (MakePlan numbered the kept ones 0..n-1, in order).
  std::vector<int> kept;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (keep[i]) kept.push_back(candidates[i].index);
  for (auto* list : {&out.nodes, &out.standbys})
    for (NodePlan& n : *list) n.index = kept[n.index];
  return out;
}

}  // namespace ds
