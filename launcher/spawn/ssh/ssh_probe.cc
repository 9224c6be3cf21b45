#include "launcher/spawn/ssh/ssh_probe.h"

#include <fmt/format.h>

#include "common/check.h"
#include "launcher/spawn/parallel_for.h"

namespace ds {

bool ElasticStartAllowed(const LaunchPlan& plan) {
  const ElasticOptions& el = plan.job.elastic;
  return el.min_nodes_set && el.min_nodes < static_cast<int>(plan.nodes.size());
}

std::vector<Status> ProbeNodes(const std::vector<NodePlan>& nodes, const SshOptions& options) {
  std::vector<Status> out(nodes.size());
  ParallelFor(nodes.size(), options.fanout, [&](size_t i) {
    const HostEntry& h = nodes[i].host;
    auto s = SshSession::Connect(SshTarget{h.name, h.user, h.ssh_port}, options);
    out[i] = s.ok() ? Status::OK() : s.status();
  });  // sessions close here; the spawner opens its own
  return out;
}

}  // namespace ds
