// JobControl, third part: whether to restart after a failed generation, and
// the next generation on the agents still alive, standbys stepping in
// (job_control.h).
#include <algorithm>

#include <fmt/format.h>

#include "common/dstrain_exit.h"
#include "common/log.h"
#include "launcher/coordinator/job_control.h"
#include "launcher/report/job_summary.h"

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

std::vector<bool> JobControl::AliveAgents() const {
  std::vector<bool> alive;
  for (size_t n = 0; n < agents_.size(); ++n) alive.push_back(NodeAlive(static_cast<uint32_t>(n)));
  return alive;
}

bool JobControl::MayRestart() {
  const ElasticOptions& el = plan_.job.elastic;
  if (el.max_restarts == 0) return false;
  const std::vector<bool> agents = AliveAgents();
  const int alive = static_cast<int>(std::count(agents.begin(), agents.end(), true));
  if (const WorkerRecord* gpu = GpuFailure(plan_.job, record_)) {
    Notice(fmt::format("not restarting: rank {} on {} had a GPU failure (dstrain exit {}); a restart would "
                       "meet the same GPU",
                       gpu->rank, gpu->host, kDstrainExitDevice));
    return false;
  }
  if (restarts_ >= el.max_restarts) {
    Notice(fmt::format("not restarting: all {} restarts used (elastic.max_restarts)", el.max_restarts));
    return false;
  }
  if (alive < el.min_nodes) {
    Notice(fmt::format("not restarting: {} node{} left, elastic.min_nodes is {}", alive,
                       alive == 1 ? "" : "s", el.min_nodes));
    return false;
  }
  return true;
}

// elastic.max_host_failures: counts the generation's failure against its
// host (a worker's failure; a lost node is out anyway) and leaves hosts in
// their cooldown out of `keep`, as long as min_nodes still holds.
void JobControl::ApplyHostCooldowns(std::vector<bool>& keep) {
  const ElasticOptions& el = plan_.job.elastic;
  if (el.max_host_failures == 0) return;
  const auto now = clock_.Now();
  const auto& f = record_.first_failure();
  if (f && f->rank >= 0 && ++host_failures_[f->host] >= el.max_host_failures) {
    host_failures_[f->host] = 0;
    cooldown_until_[f->host] = now + Seconds(el.host_cooldown);
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    const std::string& host = candidates_[i].host.name;
    auto it = cooldown_until_.find(host);
    if (!keep[i] || it == cooldown_until_.end() || now >= it->second) continue;
    const double left = std::chrono::duration<double>(it->second - now).count();
    if (std::count(keep.begin(), keep.end(), true) - 1 < plan_.job.elastic.min_nodes) {
      Notice(fmt::format("{} is in its cooldown ({:.0f} s left) but elastic.min_nodes needs it", host, left));
      continue;
    }
    keep[i] = false;
    Notice(fmt::format("{} sits out: its workers failed {} time{} (elastic.max_host_failures); "
                       "back in {:.0f} s at the earliest (elastic.host_cooldown)",
                       host, el.max_host_failures, el.max_host_failures == 1 ? "" : "s", left));
  }
}

// Generation + 1 on the agents still alive, in plan order.
void JobControl::Restart() {
  std::vector<bool> alive = AliveAgents();
  ApplyHostCooldowns(alive);
  auto next = PlanOnNodes(plan_, alive);
  if (!next.ok()) {  // cannot happen: MayRestart checked min_nodes
    Notice("not restarting: " + next.status().message());
    return Finish();
  }
  gen_plan_ = std::move(next).value();
  gen_agents_.clear();  // the first nodes.size() alive candidates are the nodes
  for (size_t i = 0; i < agents_.size() && gen_agents_.size() < gen_plan_.nodes.size(); ++i)
    if (alive[i]) gen_agents_.push_back(static_cast<int>(i));
  ++generation_;
  ++restarts_;
  const std::string cause = record_.first_failure() ? DescribeFailure(*record_.first_failure()) : "?";
  failure_time_ = record_.first_failure_time;
  record_.NewGeneration(generation_);
  store_.Clear();  // the last generation's rendezvous keys must not leak into this one
  master_port_ = opt_.master_port;
  Notice(fmt::format("restart {}/{}: generation {} on {} node{}, world size {}, after {}", restarts_,
                     plan_.job.elastic.max_restarts, generation_, gen_agents_.size(),
                     gen_agents_.size() == 1 ? "" : "s", gen_plan_.world_size, cause));
  PrepareGeneration();
}

}  // namespace ds
