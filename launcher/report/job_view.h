// JobView: one picture of a running job as the user sees it, plain data.
// The coordinator fills it (launcher/coordinator/job_view_builder.h) from
// JobControl and its per-rank progress; the status line (status_line.h) and
// the Prometheus exposition (metrics_text.h) are rendered from it, so the
// three never disagree. Copyable value; no I/O, no clock of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

// A node's snapshots (checkpoint snapshots on), from its agent's SnapshotHeld
// reports (launcher/coordinator/snapshot_tally.h). Totals never decrease.
struct NodeSnapshotView {
  int64_t step = -1;               // the newest step it holds a shard of; -1: none
  bool in_memory = false;          // some shard of `step` is in its memory (else on its disk only)
  uint64_t bytes_held = 0;         // shards it holds now (memory and disk copies)
  uint64_t handed_bytes = 0;       // its workers handed to its agent, total
  uint64_t replica_bytes = 0;      // its agent sent to peers as replicas, total ...
  double replica_seconds = 0;      // ... taking this long
  uint64_t disk_bytes = 0;         // its agent wrote to its disk, total ...
  double disk_seconds = 0;         // ... taking this long
};

struct NodeView {
  uint32_t node = 0;               // node index (candidates: the plan's nodes, then its standbys)
  std::string host;                // as the user knows it
  std::string state;               // "running" | "idle" (registered, not in this generation) | "waiting" | "lost"
  double heard_seconds_ago = -1;   // since its agent's last frame; <0: never heard
  double rtt_seconds = -1;         // its last heartbeat round trip (a stamped Ping echoed); <0: none measured
  NodeSnapshotView snapshot;
  bool slow = false;               // reported slow in compute (straggler.h) and not recovered
  bool slow_link = false;          // reported slow by its heartbeat round trip (slow_link.h)
};

struct RankView {
  int32_t rank = 0;
  uint32_t node = 0;
  std::string host;
  int64_t step = -1;               // -1: none reported this generation
  double step_seconds = 0;         // mean over the agent's window; 0: unknown
  double samples_per_second = -1;  // <0: unknown
  double save_stall_seconds = -1;  // the rank's last snapshot save's stall; <0: none said
  int64_t loss_step = -1;          // the step of the newest loss the rank said (its own scalar); -1: none
  double loss = 0;
  int64_t accuracy_step = -1;      // the step of the newest evaluation accuracy it said; -1: none
  double accuracy = 0;             // 0..1
};

struct JobView {
  std::string job_id;
  std::string state;               // JobControl's phase: "waiting", "gathering", "reserving", "running", "stopping", "done"
  double elapsed_seconds = 0;      // since dslaunch started the job
  int generation = 0;
  int restarts = 0;                // job-wide, so far
  int max_restarts = 0;            // elastic.max_restarts
  int world_size = 0;              // this generation's
  int ranks_running = 0;           // workers started and not exited, this generation
  int agents_registered = 0;
  int nodes_lost = 0;              // agents lost so far (a rejoined node counts again when lost again)
  bool snapshots = false;          // checkpoint snapshots on (the agents keep them)
  uint64_t snapshots_taken = 0;    // saves handed to the agents so far
  int64_t snapshot_step = -1;      // the newest step any node holds a shard of; -1: none
  // The recovery point (launcher/coordinator/recovery_point.h): the newest
  // save on enough nodes to survive a loss, and what a loss would cost now.
  int64_t recovery_point_step = -1;  // -1: none yet
  int64_t steps_at_risk = -1;        // -1: unknown (no rank reported a step)
  int64_t worst_steps_at_risk = -1;  // the most it ever was
  std::vector<NodeView> nodes;     // every candidate, by node index
  std::vector<RankView> ranks;     // sorted by rank; only ranks heard of this generation
  int exit_code = -1;              // dslaunch's exit code once the job ended (the job record); -1: running
  int64_t pid = 0;                 // dslaunch's process id
};

}  // namespace ds
