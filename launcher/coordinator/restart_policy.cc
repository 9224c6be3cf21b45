#include "launcher/coordinator/restart_policy.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/dstrain_exit.h"

namespace ds {
namespace {

// The workers of this generation that ended with dstrain's GPU failure
// (exit kDstrainExitDevice: CUDA, cuBLAS, a kernel's fault), first by rank
// on each host, when the job runs the built-in trainer (another program's
// exit 4 means nothing here). Any worker, not only the first failure: the
// faulting rank and its peers' communication failures race to be first.
std::map<std::string, int> GpuFailures(const JobSpec& job, const JobRecord& record) {
  std::map<std::string, int> out;
  if (job.trainer_yaml.empty()) return out;
  for (const auto& [rank, w] : record.workers())
    if (w.exited() && w.signal == 0 && w.exit_code == kDstrainExitDevice) out.emplace(w.host, rank);
  return out;
}

}  // namespace

RestartPolicy::RestartPolicy(const LaunchPlan& plan, const std::vector<std::string>& names,
                             std::function<void(const std::string&)> notice)
    : plan_(plan), names_(names), notice_(std::move(notice)) {}

bool RestartPolicy::MayRestart(const JobRecord& record, const std::vector<bool>& alive) {
  if (plan_.job.elastic.max_restarts == 0) return false;
  const std::string why = WhyNot(record, alive);
  if (!why.empty()) notice_("not restarting: " + why);
  return why.empty();
}

std::string RestartPolicy::WhyNot(const JobRecord& record, const std::vector<bool>& alive) const {
  const ElasticOptions& el = plan_.job.elastic;
  if (el.max_restarts == 0) return "elastic.max_restarts is 0";
  const std::map<std::string, int> gpu = GpuFailures(plan_.job, record);
  std::set<std::string> gpu_hosts = budget_.gpu_out;
  for (const auto& [host, rank] : gpu) gpu_hosts.insert(host);
  if (gpu_hosts.size() > 1)
    return fmt::format("GPU failures (dstrain exit {}) on {} hosts, {}: a fault on more than one host follows "
                       "the job, not a GPU",
                       kDstrainExitDevice, gpu_hosts.size(), fmt::join(gpu_hosts, ", "));
  if (budget_.restarts >= el.max_restarts) return fmt::format("all {} restarts used (elastic.max_restarts)", el.max_restarts);
  int left = 0;
  for (size_t i = 0; i < alive.size(); ++i) left += alive[i] && !gpu_hosts.count(names_[i]);
  if (left < el.min_nodes) {
    const std::string without =
        gpu.empty() ? "" : fmt::format(" without {} (rank {}: a GPU failure)", gpu.begin()->first, gpu.begin()->second);
    return fmt::format("{} node{} left{}, elastic.min_nodes is {}", left, left == 1 ? "" : "s", without, el.min_nodes);
  }
  return "";
}

// A host whose GPU failed sits out the rest of the job: a restart on it
// would likely meet the same fault (a sticky CUDA error, a GPU off the bus
// needs the node reset). WhyNot has checked that min_nodes holds without it.
void RestartPolicy::LeaveOutGpuFailures(std::vector<bool>& keep, const JobRecord& record) {
  for (const auto& [host, rank] : GpuFailures(plan_.job, record)) {
    if (budget_.gpu_out.insert(host).second)
      notice_(fmt::format("{} sits out the rest of the job: rank {} had a GPU failure (dstrain exit {})", host, rank,
                          kDstrainExitDevice));
  }
  for (size_t i = 0; i < keep.size(); ++i)
    if (budget_.gpu_out.count(names_[i])) keep[i] = false;
}

// elastic.max_host_failures: counts the generation's failure against its
// host (a worker's failure; a lost node is out anyway) and leaves hosts in
// their cooldown out of `keep`, as long as min_nodes still holds.
void RestartPolicy::ApplyHostCooldowns(std::vector<bool>& keep, const JobRecord& record, Clock::time_point now) {
  const ElasticOptions& el = plan_.job.elastic;
  if (el.max_host_failures == 0) return;
  const auto& f = record.first_failure();
  if (f && f->rank >= 0 && ++budget_.host_failures[f->host] >= el.max_host_failures) {
    budget_.host_failures[f->host] = 0;
    budget_.cooldown_until[f->host] = now + Seconds(el.host_cooldown);
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    const std::string& host = names_[i];
    auto it = budget_.cooldown_until.find(host);
    if (!keep[i] || it == budget_.cooldown_until.end() || now >= it->second) continue;
    const double left = std::chrono::duration<double>(it->second - now).count();
    if (std::count(keep.begin(), keep.end(), true) - 1 < el.min_nodes) {
      notice_(fmt::format("{} is in its cooldown ({:.0f} s left) but elastic.min_nodes needs it", host, left));
      continue;
    }
    keep[i] = false;
    notice_(fmt::format("{} sits out: its workers failed {} time{} (elastic.max_host_failures); "
                        "back in {:.0f} s at the earliest (elastic.host_cooldown)",
                        host, el.max_host_failures, el.max_host_failures == 1 ? "" : "s", left));
  }
}

Result<NextGeneration> RestartPolicy::Restart(std::vector<bool> alive, const JobRecord& record,
                                              Clock::time_point now) {
  LeaveOutGpuFailures(alive, record);
  ApplyHostCooldowns(alive, record, now);
  DS_ASSIGN_OR_RETURN(LaunchPlan plan, PlanOnNodes(plan_, alive));
  NextGeneration next{std::move(plan), {}};
  // The first nodes.size() alive candidates are the nodes, in plan order.
  for (size_t i = 0; i < alive.size() && next.agents.size() < next.plan.nodes.size(); ++i)
    if (alive[i]) next.agents.push_back(static_cast<int>(i));
  ++budget_.restarts;
  return next;
}

}  // namespace ds
