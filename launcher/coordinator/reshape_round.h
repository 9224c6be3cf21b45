// ReshapeRound: one in-place recovery under way (elastic.in_place; JobControl
// and reshape, job_control_reshape.cc). It knows when it began and until
// when it may take, the failure it follows, the save it rolls back to and
// where that save's shards come from, the agents whose Reshaped is owed and
// the replacement ranks yet to start. JobControl sends the Reshape and
// Assign frames and asks it whether the round is done or late. Pure state,
// no I/O; the coordinator's io thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/report/job_record.h"

namespace ds {

class ReshapeRound {
 public:
  // Began at `began`; every answer and replacement start is due by `deadline`.
  ReshapeRound(Clock::time_point began, Clock::time_point deadline, std::optional<Failure> cause)
      : began_(began), deadline_(deadline), cause_(std::move(cause)) {}

  // The save it rolls back to, and where its shards come from (for the line).
  void SetSave(int64_t step, std::string sources) {
    step_ = step;
    sources_ = std::move(sources);
  }
  void Owe(int agent) { owed_.insert(agent); }        // Reshape sent: its Reshaped is owed
  void ExpectStart(int rank) { starting_.insert(rank); }  // a replacement rank was assigned
  bool Owes(int agent) const { return owed_.count(agent) > 0; }
  // `agent` answered (or left: its workers were leaving anyway). True when it was owed.
  bool Answered(int agent) { return owed_.erase(agent) > 0; }
  void Started(int rank) { starting_.erase(rank); }
  bool done() const { return owed_.empty() && starting_.empty(); }
  Clock::time_point deadline() const { return deadline_; }
  const std::optional<Failure>& cause() const { return cause_; }
  // "recovered in place at step 40 in 23 ms: <sources>", at `now`.
  std::string DoneLine(Clock::time_point now) const;
  // Past the deadline: "<host> did not answer within 5 s" (the first agent
  // owed, named by `names`), else "rank 3 did not start within 5 s".
  std::string LateReason(const std::vector<std::string>& names, double budget_seconds) const;

 private:
  Clock::time_point began_;
  Clock::time_point deadline_;
  std::optional<Failure> cause_;
  int64_t step_ = -1;
  std::string sources_;
  std::set<int> owed_;      // agents whose Reshaped is owed
  std::set<int> starting_;  // replacement ranks not yet started
};

}  // namespace ds
