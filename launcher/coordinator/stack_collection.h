// StackCollection: a hung generation's stacks, collected from its agents
// before anything is stopped (JobControl and hangs, job_control_hang.cc).
// It knows why it was begun, whose verdict it follows, which agents owe an
// answer, what arrived, and until when to wait; JobControl sends the
// DumpStacks, feeds it the Stacks frames and acts when it is complete or its
// deadline passed. Pure state, no I/O; the coordinator's io thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/coordinator/hang_report.h"
#include "launcher/coordinator/rank_progress.h"
#include "launcher/report/job_record.h"
#include "wire/protocol.h"

namespace ds {

class StackCollection {
 public:
  static constexpr double kSeconds = 10.0;  // agents answer DumpStacks within this

  // Begins a collection for `generation`: `why` is the failure it will
  // report, `culprit` the agent whose hang_timeout verdict it follows (-1:
  // the detector's), `asked` the agents (candidate indices) sent DumpStacks.
  void Begin(std::string why, int culprit, int generation, Clock::time_point now, const std::vector<int>& asked);
  // `node`'s Stacks: kept when it is owed (this generation, not answered
  // yet). True when nothing more is owed.
  bool OnStacks(int node, const msg::Stacks& m);
  bool active() const { return deadline_ != Clock::time_point::max(); }
  bool complete() const { return owed_.empty(); }
  Clock::time_point deadline() const { return deadline_; }
  const std::string& why() const { return why_; }
  int culprit() const { return culprit_; }
  // Every rank of `record`'s generation with its step (from `progress`) and
  // its stacks, or "no answer from <host> within 10 s"; then inactive again.
  std::vector<HangStack> Finish(const JobRecord& record, const RankProgressView& progress);
  void Clear() { *this = StackCollection{}; }

 private:
  Clock::time_point deadline_ = Clock::time_point::max();  // max: not collecting
  std::string why_;
  int culprit_ = -1;
  int generation_ = -1;
  std::vector<int> owed_;                 // agents yet to answer
  std::map<int, msg::RankStack> got_;     // by rank
};

}  // namespace ds
