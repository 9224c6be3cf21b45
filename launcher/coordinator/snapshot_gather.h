// SnapshotGather: JobControl's snapshot part, by its own name. With
// snapshots on (checkpoint_options.h) the agents keep the shards; this knows
// who holds what (SnapshotIndex), each agent's setup (ready, its shard
// server's address, its counters), and, before every generation, gathers a
// step: it picks the newest save complete among the living nodes, tells each
// agent of the generation where its replicas go (Replicate, ring order) and
// what to fetch from whom (Fetch), and waits for every Fetched. A save that
// one node cannot gather is left out and the next older one is tried.
// Between gathers its RecoveryPoint says what the agents keep and secure.
//
// Its phases move forward only, within one generation's gather:
//   kIdle -> Begin -> kWaiting (agents' SnapshotReady owed) -> kFetching -> kIdle
// (Abandon, or the last Fetched, returns to kIdle). It sends nothing: each
// input returns a GatherEvent and Gather() returns the messages, and
// JobControl acts on them (job_control_snapshot.cc).
// Not thread-safe: the coordinator's io thread; time is passed in.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/config/plan.h"
#include "launcher/coordinator/recovery_point.h"
#include "launcher/coordinator/snapshot_index.h"
#include "launcher/coordinator/snapshot_tally.h"
#include "wire/protocol.h"

namespace ds {

// What an input means for JobControl.
struct GatherEvent {
  enum class Kind {
    kNone,         // nothing to do
    kReady,        // every agent of the generation has its snapshots set up: call Gather()
    kGathered,     // every agent of the generation holds the step: start the generation
    kRetry,        // an agent could not gather the step (left out now): say `what`, call Gather() again
    kSetupFailed,  // the agent cannot keep snapshots: the job ends with `what`
  };
  Kind kind = Kind::kNone;
  std::string what;
};

// What Gather() has the agents do, and what the user must see.
struct Gathering {
  std::vector<std::string> notices;  // the recovery decision; once per job, the earlier runs' saves kept
  msg::Fetch fetch;                  // to every agent of the generation
  struct Order {
    int node = 0;
    msg::Replicate replicate;        // its replicas' targets
  };
  std::vector<Order> orders;         // by generation node, Replicate then Fetch to each
};

class SnapshotGather {
 public:
  // `plan` and `names` (what the user knows each candidate as, for the
  // notices) must outlive it; agents are the plan's Candidates() by index.
  // The peer key is derived from `secret` and `job_id`, never the secret itself.
  SnapshotGather(const LaunchPlan& plan, const std::vector<std::string>& names, const std::string& secret,
                 const std::string& job_id, std::string run_id);

  // What `node`'s agent is told when it registers (or rejoins): it is not
  // ready until it answers, and what it reported before is forgotten (it
  // reports its disk again).
  msg::SnapshotSetup Setup(int node);
  // `node` was lost: its copies are gone.
  void Forget(int node) {
    index_.Forget(node);
    point_.Forget(node);
    tally_.Forget(node);
  }
  // SnapshotReady: kSetupFailed on the agent's error, kReady when it was the
  // last one owed, else kNone.
  GatherEvent OnReady(int node, const msg::SnapshotReady& m);
  // SnapshotHeld: what `node` now holds, and its counters.
  void OnHeld(int node, const msg::SnapshotHeld& m);
  // Fetched: kGathered for the last one owed, kRetry when the agent failed
  // (its save is left out), kNone otherwise (an answer owed, or a stale one:
  // another generation's, an abandoned save's, or while not fetching).
  GatherEvent OnFetched(int node, const msg::Fetched& m, Clock::time_point now);

  // Starts `generation`'s gather on `agents` (candidate indices, generation
  // node order), no save left out yet: kReady when all are set up, else
  // kNone (OnReady says kReady later).
  GatherEvent Begin(int generation, std::vector<int> agents);
  // Picks the step among the `alive` candidates and says who fetches what
  // and replicates where; Fetched is then owed by every agent of the generation.
  Gathering Gather(const std::vector<bool>& alive, Clock::time_point now);
  // The generation stops before it gathered: later answers are stale.
  void Abandon() { phase_ = Phase::kIdle; }

  // What every agent must keep and secure (RecoveryPoint), when it changed
  // since the last time it was taken; nullopt otherwise.
  std::optional<msg::SnapshotPlan> TakePlan();
  // The plan as it is, for an agent that just set up its snapshots.
  const msg::SnapshotPlan& plan() const { return point_.plan(); }
  // The line that says the cadence the agents can sustain, once, when
  // whole saves are being skipped; nullopt otherwise.
  std::optional<std::string> TakeCadenceNotice();
  // The newest step a rank reached, for the steps a loss would cost now.
  void NoteProgress(int64_t step) { point_.NoteProgress(step); }
  RecoveryFigures recovery() const { return point_.figures(); }
  const msg::SaveRef& recovery_point() const { return point_.point(); }
  void RestoreRecoveryPoint(const msg::SaveRef& point, int64_t worst) { point_.Restore(point, worst); }
  // An in-place recovery went on from resume_step() (RecoveryPoint::Resumed).
  void Resumed() { point_.Resumed(resume_step_); }

  // What this generation's workers load (step -1: start fresh), and which save of it.
  int64_t resume_step() const { return resume_step_; }
  const msg::SnapshotId& resume_id() const { return resume_id_; }
  // Where the last Gather() takes the save's shards from (DescribePicks).
  std::string DescribeSources() const { return DescribePicks(choice_, names_); }
  // The job's snapshot line of the summary (the agents' counters added up).
  std::string Summary() const;
  // What the job's views show of the snapshots (job_view_builder.h).
  const SnapshotTally& tally() const { return tally_; }

 private:
  enum class Phase { kIdle, kWaiting, kFetching };
  struct Agent {
    bool ready = false;              // answered SnapshotSetup
    bool in_generation = false;      // one of Begin's agents
    std::string peer_addr;           // its shard server
    msg::SnapshotCounters counters;  // its latest totals
  };

  const LaunchPlan& plan_;
  std::vector<NodePlan> candidates_;  // agents_ by index ({host} in their directories)
  const std::vector<std::string>& names_;
  std::string peer_key_;
  std::string run_id_;
  std::vector<Agent> agents_;
  SnapshotIndex index_;
  RecoveryPoint point_;
  SnapshotTally tally_;
  bool cadence_said_ = false;
  Phase phase_ = Phase::kIdle;
  int generation_ = 0;
  std::vector<int> gen_agents_;        // Begin's
  size_t unready_ = 0;                 // gen_agents_ not ready (kWaiting)
  std::set<SnapshotIndex::Save> bad_saves_;  // saves that failed to gather this generation
  std::set<int> fetching_;             // agents whose Fetched is owed (kFetching)
  int64_t resume_step_ = -1;
  msg::SnapshotId resume_id_;
  RecoveryChoice choice_;              // the last Gather()'s
  bool kept_said_ = false;             // the line about earlier runs' saves was given
  Clock::time_point gather_started_;
};

}  // namespace ds
