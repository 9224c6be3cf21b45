#include "launcher/ssh_preflight.h"

#include <fmt/format.h>

#include "common/check.h"
#include "launcher/parallel_for.h"

namespace ds {

bool ElasticStartAllowed(const LaunchPlan& plan) {
  const ElasticOptions& el = plan.job.elastic;
  return el.min_nodes_set && el.min_nodes < static_cast<int>(plan.nodes.size());
}

std::vector<Status> ProbeNodes(const LaunchPlan& plan, const SshOptions& options) {
  std::vector<Status> out(plan.nodes.size());
  ParallelFor(plan.nodes.size(), options.fanout, [&](size_t i) {
    const HostEntry& h = plan.nodes[i].host;
    auto s = SshSession::Connect(SshTarget{h.name, h.user, h.ssh_port}, options);
    out[i] = s.ok() ? Status::OK() : s.status();
  });  // sessions close here; the spawner opens its own
  return out;
}

Result<LaunchPlan> PlanOnReachable(const LaunchPlan& plan, const std::vector<bool>& reachable) {
  DS_CHECK(reachable.size() == plan.nodes.size());
  std::vector<SelectedHost> hosts;
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    if (reachable[i]) hosts.push_back(SelectedHost{plan.nodes[i].host, plan.nodes[i].slots});
  const int min_nodes = plan.job.elastic.min_nodes;
  if (static_cast<int>(hosts.size()) < min_nodes)
    return Status::Unavailable(fmt::format("{} of {} hosts reachable, elastic.min_nodes is {}", hosts.size(),
                                           plan.nodes.size(), min_nodes));
  // max_nodes already held the rest back as standbys, so none is added here.
  DS_ASSIGN_OR_RETURN(LaunchPlan out, MakePlan(hosts, plan.job, plan.use_gpus));
  out.standbys = plan.standbys;
  out.hostfile_path = plan.hostfile_path;
  return out;
}

}  // namespace ds
