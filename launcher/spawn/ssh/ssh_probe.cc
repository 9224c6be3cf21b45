#include "launcher/spawn/ssh/ssh_probe.h"

#include <netdb.h>

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

Status CheckNodesResolve(const std::vector<NodePlan>& nodes, const SshOptions& options) {
  std::vector<std::string> why(nodes.size());
  ParallelFor(nodes.size(), options.fanout, [&](size_t i) {
    const HostEntry& h = nodes[i].host;
    const std::string name = h.addr.empty() ? SshHostName(h.name, options) : h.addr;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &res);
    if (res) ::freeaddrinfo(res);
    if (rc != 0) why[i] = fmt::format("{} ({})", h.name, ::gai_strerror(rc));
  });
  std::vector<std::string> failed;
  for (std::string& w : why)
    if (!w.empty()) failed.push_back(std::move(w));
  if (failed.empty()) return Status::OK();
  return Status::InvalidArgument(fmt::format("{} host{} do{} not resolve: {}", failed.size(),
                                             failed.size() == 1 ? "" : "s", failed.size() == 1 ? "es" : "",
                                             fmt::join(failed, ", ")));
}

}  // namespace ds
