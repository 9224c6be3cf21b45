// JobState: what a job must remember to go on when its coordinator is
// replaced, as one value. JobControl gives it (JobControl::State) after
// each transition (a generation starts, a restart is counted, a host cools
// down, a node is evicted, the recovery point moves), never per heartbeat;
// coordinator failover (docs/architecture.md) writes it to etcd as one
// versioned JSON document, and a standby takes the job over from it.
// Everything else (liveness, progress, heartbeat round trips, who holds
// which shard) is rebuilt from what the agents report when they register
// again. A plain value: copy it freely; not thread-safe.
//
// Times are steady-clock points of the process that took the value; a
// standby's steady clock is another, so the text keeps what is left of
// each cooldown at `now` and the reader adds its own `now`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/coordinator/restart_policy.h"
#include "wire/protocol.h"

namespace ds {

enum class CoordState { kWaitingForAgents, kGathering, kReserving, kRunning, kStopping, kDone };

// One candidate (a plan node, then the standbys), by index.
struct CandidateState {
  std::string name;         // what the user knows it as (its host, or its agent's in the per-node form)
  bool registered = false;  // its agent registered at least once
  bool lost = false;        // lost and not back
  bool operator==(const CandidateState&) const = default;
};

struct JobState {
  static constexpr int kVersion = 1;
  std::string job_id;
  std::string run_id;
  CoordState phase = CoordState::kWaitingForAgents;
  int generation = 0;
  std::vector<int> generation_nodes;  // the generation's node i runs on candidate generation_nodes[i]
  int world_size = 0;                 // the generation's
  int master_port = 0;                // the generation's MASTER_PORT on its node 0 (0: not reserved yet)
  std::vector<CandidateState> candidates;
  RestartBudget budget;
  std::map<uint32_t, Clock::time_point> evicted_until;  // candidate -> end of its eviction cooldown
  msg::SaveRef recovery_point;        // step -1: none yet
  int64_t worst_at_risk = -1;
  bool operator==(const JobState&) const = default;
};

// The JSON text (one object, "version": kVersion), cooldowns as what is left at `now`.
std::string EncodeJobState(const JobState& s, Clock::time_point now);
// Error naming `where` and the key: not JSON, another version, a field of the
// wrong type or out of range. Cooldowns end at `now` plus what was left.
Result<JobState> DecodeJobState(const std::string& text, Clock::time_point now, const std::string& where);

const char* CoordStateName(CoordState s);

}  // namespace ds
