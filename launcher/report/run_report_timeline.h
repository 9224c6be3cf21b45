// RunTimeline: the story of a job for `dslaunch report` (run_report.h), kept
// in the job record a finished job leaves (launcher/cmd/job_watch.h writes
// it under "timeline"): its generations (start, nodes, world size), its
// restarts with their causes, nodes lost and rejoined, nodes reported slow,
// the job's samples/s over time and its snapshot points, the loss and
// evaluation accuracy over steps (the lowest rank's that says them: dstrain's
// global loss, or what a script passes to its beats) and a per-rank strip of
// step times (who lagged, when). TimelineSampler builds it from the
// JobView sampled every few seconds (JobWatch's timer, never per step), so
// times are the job's elapsed seconds to within that period; a restart is
// placed at its failure's own time. Bounded: at
// most kMaxSamples points (when full, every other point of the older half is
// dropped, so the oldest are the thinnest), as many loss and accuracy points,
// kMaxEvents events and kMaxGenerations generations (later ones are counted,
// not kept), a strip of at most kMaxStripRanks ranks (the first seen; the
// others counted) by kMaxStripColumns samples.
// Plain data and a single-threaded sampler (the io thread); no I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/report/job_view.h"

namespace ds {

struct TimelineGeneration {
  int generation = 0;
  double start = 0;              // elapsed seconds when it was first seen
  int world_size = 0;            // the most seen while it ran
  std::vector<uint32_t> nodes;   // the nodes seen running in it, ascending
};

struct TimelineEvent {
  double t = 0;
  std::string kind;   // "restart" | "lost" | "rejoined" | "slow"
  int node = -1;      // -1: the whole job (a restart)
  std::string host;
  std::string text;   // a restart's cause (DescribeFailure), else ""
};

struct TimelineSample {
  double t = 0;
  double samples_per_second = 0;  // the job's: the sum over the ranks that report it
};

// A snapshot point: when the sampler first saw saves taken rise (also in the
// last view, of the job done), and the newest step a node held then (in the
// last view, where the agents have left, the newest step seen before; -1
// when none was ever seen); more saves between two samples show as one.
struct TimelineSnapshot {
  double t = 0;
  int64_t step = -1;
};

// A restart as the sampler is told of it: when its failure happened (the
// job's elapsed seconds) and the failure described.
struct RestartCause {
  double t = 0;
  std::string text;
};

// A loss or accuracy the worker said at `step`.
struct MetricPoint {
  int64_t step = 0;
  double value = 0;
};

// One sample of the step-time strip: per rank of RunTimeline::strip_ranks
// (by index; a column taken before a rank was first seen is shorter) its
// mean step time then, in seconds; <= 0: not heard.
struct StripColumn {
  double t = 0;
  std::vector<double> step_seconds;
};

struct RunTimeline {
  double end = 0;                 // elapsed seconds of the last sample
  size_t dropped = 0;             // events and generations not kept (the bounds)
  std::vector<TimelineGeneration> generations;
  std::vector<TimelineEvent> events;    // in time order
  std::vector<TimelineSample> samples;  // in time order
  std::vector<TimelineSnapshot> snapshots;  // in time order
  int metric_rank = -1;                     // whose loss/accuracy the points are (the last one used); -1: none
  std::vector<MetricPoint> losses;          // ascending steps (a restart that went back replaces what
  std::vector<MetricPoint> accuracies;      //   it redoes: the curve is the run as it stands)
  std::vector<int32_t> strip_ranks;         // the ranks in the strip, in the order first seen
  size_t strip_ranks_left_out = 0;          // ranks seen beyond kMaxStripRanks
  std::vector<StripColumn> strip;           // in time order
};

class TimelineSampler {
 public:
  static constexpr size_t kMaxSamples = 2000;  // and as many snapshot points
  static constexpr size_t kMaxEvents = 2000;
  static constexpr size_t kMaxGenerations = 1000;
  static constexpr size_t kMaxStripRanks = 64;
  static constexpr size_t kMaxStripColumns = 240;

  // One look at the job: `slow` the nodes reported slow now
  // (JobControl::slow_nodes), `restart_causes` every restart so far, oldest
  // first (the job record's, described; a time past the view's is taken as
  // the view's). A view of a
  // job "done" only moves the end: its agents leaving are no nodes lost.
  void Sample(const JobView& view, const std::vector<uint32_t>& slow, const std::vector<RestartCause>& restart_causes);
  const RunTimeline& timeline() const { return t_; }

 private:
  void Event(TimelineEvent e);
  void AddSample(double t, double sps);
  void AddSnapshot(double t, int64_t step);
  void AddMetrics(const JobView& view);
  void AddStripColumn(const JobView& view);

  RunTimeline t_;
  int generation_ = -1;
  std::map<uint32_t, std::string> state_;  // node -> its state at the last sample
  std::set<uint32_t> slow_;
  size_t causes_seen_ = 0;
  uint64_t saves_seen_ = 0;
  int64_t newest_step_seen_ = -1;
  std::set<int32_t> strip_left_out_;  // ranks counted in strip_ranks_left_out
};

}  // namespace ds
