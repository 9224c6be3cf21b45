// RecoveryPoint: the one guarantee the snapshots exist for, kept in one
// place (checkpoint_format.md "The recovery point"). Of this run's saves,
// one is *complete* when the living nodes hold every rank's shard (in memory
// or on a disk), and *recoverable* when every shard is on at least `copies`
// distinct living nodes (1 + the replicas, at most the generation's nodes):
// losing any `copies - 1` nodes leaves a copy of each shard. The recovery
// point is the newest recoverable save; a failure of at most that many nodes
// never costs more than the steps since it. It only moves forward: when a
// node loss leaves it short of copies, it stays (and stays protected) while
// any copy of it is held, until a newer save is recoverable.
//
// It also picks the one save the agents secure (persist and replicate) at a
// time: the newest complete save, picked again only once the one before is
// secured (recoverable, and on its writers' disks when the job has a
// checkpoint directory) or cannot be any more (a writer's node no longer
// holds its shard: only a writer sends its own).
// When replication or the disks cannot keep up with the cadence, whole saves
// are skipped alike on every node, never a shard here and another there.
// What the agents must do follows as one msg::SnapshotPlan: the newest
// complete step (saves up to it count toward `keep`, newer ones are still
// being handed over), the saves no copy of which may be dropped (the
// recovery point and the one being secured), and that one.
//
// Pure: fed the entries the agents report; no sockets, no clock. Add,
// Remove and Forget are O(log) per entry (counts kept per save), Update is
// O(saves held). Not thread-safe: the coordinator's io thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wire/protocol.h"

namespace ds {

// The figures the views and the summary show.
struct RecoveryFigures {
  int64_t point = -1;             // the recovery point's step; -1: none yet in this run
  int64_t steps_at_risk = -1;     // the newest step a rank reached minus the point (or the generation's start); -1: unknown
  int64_t worst_at_risk = -1;     // the most steps_at_risk ever was
  uint64_t complete_saves = 0;    // saves that were complete at some time
  uint64_t secured_saves = 0;     // of them, secured (recoverable)
  int64_t asked_every = -1;       // the smallest step gap between two complete saves (the cadence asked)
  int64_t secured_every = -1;     // the mean step gap between secured saves
};

class RecoveryPoint {
 public:
  // `run`: the saves of this run count (earlier runs' are never pruned by
  // it anyway). `on_disk`: the job has a checkpoint directory, so a save is
  // secured only once its writers persisted their shards too.
  RecoveryPoint(std::string run, bool on_disk) : run_(std::move(run)), on_disk_(on_disk) {}

  void Apply(int node, const msg::SnapshotHeld& m);
  void Forget(int node);  // a lost node's copies are gone
  // A new generation: `copies` distinct nodes make a save recoverable; it
  // resumes from `resumed` (step -1: from scratch). The save being secured is
  // given up (the agents drop the lost timeline's saves themselves).
  void NewGeneration(int copies, int64_t resumed);
  // The generation started from `resumed` (its gather succeeded): this run's
  // saves newer than it are an abandoned timeline, forgotten here and named
  // in the next plan's `drop` (until then a fallback drops nothing protected).
  void Resumed(int64_t resumed);
  // The newest step any rank reached (its Progress), for the steps at risk.
  void NoteProgress(int64_t step);
  // Recomputes the plan; true when it changed since the last true (send it).
  bool Update();

  const msg::SnapshotPlan& plan() const { return plan_; }
  const msg::SaveRef& point() const { return point_; }
  // A coordinator taking over the job (job_state.h): the point and the
  // worst steps at risk so far come back; the copies are learnt again from
  // the agents' SnapshotHeld. The point is protected meanwhile.
  void Restore(const msg::SaveRef& point, int64_t worst_at_risk);
  RecoveryFigures figures() const;
  // "snapshots every 10 steps asked; replicas kept up with one in 38 (every 380
  // steps)" once saves were skipped, else "".
  std::string DescribeCadence() const;

 private:
  struct Shard {
    std::map<int, uint8_t> nodes;  // node -> tiers it holds the shard in (bit 1 memory, bit 2 disk)
    uint32_t origin = 0;
  };
  struct Save {
    std::vector<Shard> shards;     // by rank, id.world of them
    uint32_t held = 0;             // shards with a copy on some node
    uint32_t spread = 0;           // shards on at least copies_ nodes
    uint32_t on_origin = 0;        // shards their writer's node holds (it is the one that sends them)
    uint32_t on_origin_disk = 0;   // shards on their writer's disk
    bool was_complete = false;
    bool was_secured = false;
  };
  using Key = std::pair<int64_t, std::string>;  // (step, set)

  void Change(int node, const msg::ShardEntry& e, bool add);
  void Recount(Save& s) const;
  bool Secured(const Save& s) const;
  void NoteComplete(int64_t step, Save& s);
  void NoteSecured(int64_t step, Save& s);

  const std::string run_;
  const bool on_disk_;
  int copies_ = 1;
  std::map<Key, Save> saves_;
  msg::SaveRef point_;
  bool restored_ = false;          // point_ came from Restore and no agent reported it yet
  msg::SaveRef securing_;
  std::vector<msg::SaveRef> abandoned_;  // for the next plan's drop
  msg::SnapshotPlan plan_;
  msg::SnapshotPlan sent_;
  bool sent_once_ = false;
  int64_t base_ = 0;               // where the generation started: the point before there is one
  int64_t newest_step_ = -1;
  int64_t worst_ = -1;
  uint64_t complete_ = 0, secured_ = 0;
  int64_t last_complete_ = -1, min_gap_ = -1;
  int64_t first_secured_ = -1, last_secured_ = -1;
};

}  // namespace ds
