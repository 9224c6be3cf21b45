// Evictions: elastic.evict_slow's bookkeeping. A node the StragglerDetector
// reported slow is marked; it is evicted at the next snapshot boundary (the
// first step newer than any handed over when it was marked that every node
// of the generation has handed over, from the agents' SnapshotHeld), or at
// once when the job keeps no snapshots; JobControl then restarts without it
// through the ordinary restart path (job_control_evict.cc). An evicted node
// sits out every restart for evict_cooldown seconds, while at least
// min_nodes others are left; then it is a candidate again, as a standby is.
// Pure bookkeeping on given times. Not thread-safe: the coordinator's io thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "common/clock.h"

namespace ds {

class Evictions {
 public:
  Evictions(bool on, double cooldown_seconds) : on_(on), cooldown_(Seconds(cooldown_seconds)) {}

  bool on() const { return on_; }
  // `node` was reported slow: true when newly marked (it waits for the boundary).
  bool Mark(uint32_t node);
  bool pending() const { return !marked_.empty(); }
  const std::set<uint32_t>& marked() const { return marked_; }
  // `node` handed over shards of `steps`: true when with it every node of
  // `generation` has handed over a step newer than the mark's (the boundary).
  bool OnHeld(uint32_t node, const std::vector<int64_t>& steps, const std::vector<int>& generation);
  // The newest step any node handed over (-1: none), for the eviction's line.
  int64_t newest_step() const;
  // The marked nodes leave at `now`: each sits out until now + cooldown. Returns them.
  std::vector<uint32_t> Evict(Clock::time_point now);
  // A new generation for another reason: marks are dropped (the detector judges afresh).
  void ClearMarks() { marked_.clear(); }
  // Masks the nodes in their cooldown at `now` out of `alive`, as long as at
  // least `min_nodes` candidates stay alive.
  void Apply(std::vector<bool>& alive, size_t min_nodes, Clock::time_point now) const;
  // The evicted nodes' cooldowns (part of the job's durable state,
  // job_state.h); Restore takes them back (a coordinator taking over).
  const std::map<uint32_t, Clock::time_point>& cooldowns() const { return until_; }
  void Restore(std::map<uint32_t, Clock::time_point> until) { until_ = std::move(until); }

 private:
  bool on_;
  Clock::duration cooldown_;
  std::set<uint32_t> marked_;
  int64_t mark_step_ = -1;                       // the newest step handed over when the first was marked
  std::map<uint32_t, int64_t> newest_;           // per node, the newest step it handed over
  std::map<uint32_t, Clock::time_point> until_;  // evicted nodes' cooldowns
};

}  // namespace ds
