// RankProgressView: the coordinator's per-rank view of the job's progress,
// built from the summaries agents piggy-back on their heartbeat (msg::Progress,
// wire_format.md "Progress summaries"): per rank the last step, the mean
// step time, compute time and samples per second over the agent's window,
// the newest loss and evaluation accuracy it said, and when the coordinator
// heard it. The straggler detector, the status line,
// `dslaunch status` and the job record read it; nothing per step crosses the
// network. Coordinator (io) thread only; a value type, no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace ds {

struct RankProgress {
  int32_t rank = 0;
  uint32_t node = 0;                  // node index
  int64_t step = -1;                  // last step the rank reported; -1: none yet this generation
  double step_seconds = 0;            // mean step time over the agent's window; 0: unknown
  double compute_seconds = -1;        // mean time in compute per step (between collectives); <0: unknown
  double samples_per_second = -1;     // <0: unknown (the trainer did not say)
  double save_stall_seconds = -1;     // the rank's last snapshot save's stall; <0: none said
  int64_t loss_step = -1;             // the step of the newest loss the rank said; -1: none
  double loss = 0;                    // ... that loss (the worker's own scalar: dstrain's, dslaunch.step(loss=))
  int64_t accuracy_step = -1;         // the step of the newest evaluation accuracy it said; -1: none
  double accuracy = 0;                // ... that accuracy, 0..1
  std::chrono::steady_clock::time_point heard{};  // when the coordinator received it
};

// The coordinator's per-rank view. Coordinator (io) thread only.
class RankProgressView {
 public:
  // Records what `node`'s agent said of its ranks at `now` (each entry's node
  // and heard are set here): a rank seen before is replaced, a new one is
  // inserted in rank order. O(k log n) for k entries, n ranks known.
  void Update(uint32_t node, const std::vector<RankProgress>& ranks, std::chrono::steady_clock::time_point now);
  // Forgets every rank (a new generation: ranks and nodes change).
  void NewGeneration();
  // Sorted by rank; only ranks heard of this generation.
  const std::vector<RankProgress>& Ranks() const { return ranks_; }

 private:
  std::vector<RankProgress> ranks_;  // sorted by rank, unique
};

}  // namespace ds
