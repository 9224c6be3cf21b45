#include "launcher/coordinator/restart_policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/dstrain_exit.h"

namespace ds {
namespace {

// A worker of this generation that ended with dstrain's GPU failure (exit
// kDstrainExitDevice: CUDA, cuBLAS, a kernel's fault), when the job runs
// the built-in trainer (another program's exit 4 means nothing here); else
// nullptr. Any worker, not only the first failure: the faulting rank and
// its peers' communication failures race to be first.
const WorkerRecord* GpuFailure(const JobSpec& job, const JobRecord& record) {
  if (job.trainer_yaml.empty()) return nullptr;
  for (const auto& [rank, w] : record.workers())
    if (w.exited && w.signal == 0 && w.exit_code == kDstrainExitDevice) return &w;
  return nullptr;
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
  const int left = static_cast<int>(std::count(alive.begin(), alive.end(), true));
  if (const WorkerRecord* gpu = GpuFailure(plan_.job, record))
    return fmt::format("rank {} on {} had a GPU failure (dstrain exit {}); a restart would meet the same GPU",
                       gpu->rank, gpu->host, kDstrainExitDevice);
  if (restarts_ >= el.max_restarts) return fmt::format("all {} restarts used (elastic.max_restarts)", el.max_restarts);
  if (left < el.min_nodes)
    return fmt::format("{} node{} left, elastic.min_nodes is {}", left, left == 1 ? "" : "s", el.min_nodes);
  return "";
}

// elastic.max_host_failures: counts the generation's failure against its
// host (a worker's failure; a lost node is out anyway) and leaves hosts in
// their cooldown out of `keep`, as long as min_nodes still holds.
void RestartPolicy::ApplyHostCooldowns(std::vector<bool>& keep, const JobRecord& record, Clock::time_point now) {
  const ElasticOptions& el = plan_.job.elastic;
  if (el.max_host_failures == 0) return;
  const auto& f = record.first_failure();
  if (f && f->rank >= 0 && ++host_failures_[f->host] >= el.max_host_failures) {
    host_failures_[f->host] = 0;
    cooldown_until_[f->host] = now + Seconds(el.host_cooldown);
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    const std::string& host = names_[i];
    auto it = cooldown_until_.find(host);
    if (!keep[i] || it == cooldown_until_.end() || now >= it->second) continue;
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
  ApplyHostCooldowns(alive, record, now);
  DS_ASSIGN_OR_RETURN(LaunchPlan plan, PlanOnNodes(plan_, alive));
  NextGeneration next{std::move(plan), {}};
  // The first nodes.size() alive candidates are the nodes, in plan order.
  for (size_t i = 0; i < alive.size() && next.agents.size() < next.plan.nodes.size(); ++i)
    if (alive[i]) next.agents.push_back(static_cast<int>(i));
  ++restarts_;
  return next;
}

}  // namespace ds
