// RestartPolicy: JobControl's restart decision, by its own name. After a
// generation failed (a worker's failure, a hang, a lost agent) it says
// whether the job restarts: not once elastic.max_restarts (job-wide) are
// used, not below elastic.min_nodes alive, not after dstrain's GPU failures
// on two hosts (then it follows the job, not a GPU); and on which
// candidates the next generation runs: the alive ones less a host whose
// GPU failed (for the rest of the job: a restart there would meet the same
// GPU; min_nodes must hold without it) and less the hosts in their cooldown
// (elastic.max_host_failures worker failures, then elastic.host_cooldown out)
// while min_nodes still holds, standbys stepping in (PlanOnNodes).
// Every "not restarting" and "sits out" line goes to `notice`.
// Not thread-safe: the coordinator's io thread; time is passed in.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/config/plan.h"
#include "launcher/report/job_record.h"

namespace ds {

// What RestartPolicy remembers across generations, as one value (part of
// the job's durable state, job_state.h).
struct RestartBudget {
  int restarts = 0;                                           // job-wide, counted at each restart
  std::map<std::string, int> host_failures;                   // worker failures per host since its last cooldown
  std::map<std::string, Clock::time_point> cooldown_until;    // hosts sitting out until then
  std::set<std::string> gpu_out;                              // hosts out for the rest of the job: their GPU failed
  bool operator==(const RestartBudget&) const = default;
};

// The next generation: its plan, and the candidate (agent) index of each of its nodes.
struct NextGeneration {
  LaunchPlan plan;
  std::vector<int> agents;
};

class RestartPolicy {
 public:
  // `plan` and `names` (what the user knows each candidate as, by index; the
  // record's worker hosts) must outlive it.
  RestartPolicy(const LaunchPlan& plan, const std::vector<std::string>& names,
                std::function<void(const std::string&)> notice);

  // Whether the failed generation `record` ended may be followed by
  // another with the `alive` candidates (by index); says why not.
  bool MayRestart(const JobRecord& record, const std::vector<bool>& alive);
  // MayRestart without a word: "" when it would say yes, else its reason.
  std::string WhyNot(const JobRecord& record, const std::vector<bool>& alive) const;
  // Counts the restart and plans the next generation on `alive` less the
  // hosts in their cooldown at `now`. Error: PlanOnNodes' (cannot happen
  // after MayRestart).
  Result<NextGeneration> Restart(std::vector<bool> alive, const JobRecord& record, Clock::time_point now);
  int restarts() const { return budget_.restarts; }
  // An in-place recovery counted by Restart fell back to the full restart,
  // which counts again: the failure costs one restart, not two.
  void Refund() {
    if (budget_.restarts > 0) --budget_.restarts;
  }
  // What it remembers; Restore takes it back (a coordinator taking over the job).
  const RestartBudget& budget() const { return budget_; }
  void Restore(RestartBudget b) { budget_ = std::move(b); }

 private:
  void LeaveOutGpuFailures(std::vector<bool>& keep, const JobRecord& record);
  void ApplyHostCooldowns(std::vector<bool>& keep, const JobRecord& record, Clock::time_point now);

  const LaunchPlan& plan_;
  const std::vector<std::string>& names_;  // the candidates': nodes, then standbys
  std::function<void(const std::string&)> notice_;
  RestartBudget budget_;
};

}  // namespace ds
