#include "launcher/report/metrics_text.h"

#include <fmt/format.h>

namespace ds {
namespace {

class Exposition {
 public:
  explicit Exposition(const std::string& job) : job_("job=\"" + EscapeLabel(job) + "\"") {}
  void Family(const char* name, const char* type, const char* help) {
    name_ = name;
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void Sample(double value, const std::string& labels = "") {
    out_ += fmt::format("{}{{{}{}}} {}\n", name_, job_, labels, value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string job_;
  std::string name_;
  std::string out_;
};

std::string NodeLabels(uint32_t node, const std::string& host) {
  return fmt::format(",node=\"{}\",host=\"{}\"", node, EscapeLabel(host));
}

void NodeFamilies(Exposition& e, const JobView& v) {
  e.Family("dslaunch_node_up", "gauge", "1 when the node's agent is registered and not lost.");
  for (const NodeView& n : v.nodes) e.Sample(n.state == "running" || n.state == "idle" ? 1 : 0, NodeLabels(n.node, n.host));
  e.Family("dslaunch_node_heartbeat_age_seconds", "gauge", "Seconds since the node's agent was last heard.");
  for (const NodeView& n : v.nodes)
    if (n.heard_seconds_ago >= 0) e.Sample(n.heard_seconds_ago, NodeLabels(n.node, n.host));
  e.Family("dslaunch_heartbeat_rtt_seconds", "gauge",
           "The node's last heartbeat round trip: a Ping of the launcher's echoed by its agent.");
  for (const NodeView& n : v.nodes)
    if (n.rtt_seconds >= 0) e.Sample(n.rtt_seconds, NodeLabels(n.node, n.host));
  e.Family("dslaunch_node_slow", "gauge",
           "1 while the node is reported slow: cause=\"compute\" (its ranks' compute time against the other "
           "nodes'), cause=\"link\" (its heartbeat round trip against the other nodes').");
  for (const NodeView& n : v.nodes) {
    if (n.heard_seconds_ago < 0) continue;  // not registered: nothing judged
    e.Sample(n.slow ? 1 : 0, NodeLabels(n.node, n.host) + ",cause=\"compute\"");
    e.Sample(n.slow_link ? 1 : 0, NodeLabels(n.node, n.host) + ",cause=\"link\"");
  }
}

// With checkpoint snapshots on: what the agents hold and did, per node.
void SnapshotFamilies(Exposition& e, const JobView& v) {
  if (!v.snapshots) return;
  e.Family("dslaunch_snapshot_saves_total", "counter", "Snapshot saves the workers handed to their agents.");
  e.Sample(static_cast<double>(v.snapshots_taken));
  e.Family("dslaunch_snapshot_newest_step", "gauge", "The newest step any node holds a snapshot shard of.");
  if (v.snapshot_step >= 0) e.Sample(static_cast<double>(v.snapshot_step));
  e.Family("dslaunch_recovery_point_step", "gauge",
           "The newest snapshot save on enough nodes to survive a node loss: a loss resumes from it or later.");
  if (v.recovery_point_step >= 0) e.Sample(static_cast<double>(v.recovery_point_step));
  e.Family("dslaunch_steps_at_risk", "gauge", "Steps a node loss would cost now (the newest step minus the recovery point).");
  if (v.steps_at_risk >= 0) e.Sample(static_cast<double>(v.steps_at_risk));
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const NodeSnapshotView&);
    bool needs_step;  // sampled only for nodes holding a shard
  };
  static const Family kFamilies[] = {
      {"dslaunch_snapshot_held_step", "gauge", "The newest step the node holds a snapshot shard of.",
       [](const NodeSnapshotView& s) { return static_cast<double>(s.step); }, true},
      {"dslaunch_snapshot_held_bytes", "gauge", "Bytes of snapshot shards the node holds, memory and disk.",
       [](const NodeSnapshotView& s) { return static_cast<double>(s.bytes_held); }, false},
      {"dslaunch_snapshot_bytes_total", "counter", "Snapshot bytes the node's workers handed to its agent.",
       [](const NodeSnapshotView& s) { return static_cast<double>(s.handed_bytes); }, false},
      {"dslaunch_snapshot_replica_bytes_total", "counter", "Snapshot bytes the node's agent sent to peers.",
       [](const NodeSnapshotView& s) { return static_cast<double>(s.replica_bytes); }, false},
      {"dslaunch_snapshot_replica_seconds_total", "counter", "Time the node's agent spent sending replicas.",
       [](const NodeSnapshotView& s) { return s.replica_seconds; }, false},
      {"dslaunch_snapshot_disk_bytes_total", "counter", "Snapshot bytes the node's agent wrote to its disk.",
       [](const NodeSnapshotView& s) { return static_cast<double>(s.disk_bytes); }, false},
      {"dslaunch_snapshot_disk_seconds_total", "counter", "Time the node's agent spent writing them.",
       [](const NodeSnapshotView& s) { return s.disk_seconds; }, false},
  };
  for (const Family& f : kFamilies) {
    e.Family(f.name, f.type, f.help);
    for (const NodeView& n : v.nodes)
      if (!f.needs_step || n.snapshot.step >= 0) e.Sample(f.value(n.snapshot), NodeLabels(n.node, n.host));
  }
}

void RankFamilies(Exposition& e, const JobView& v) {
  auto labels = [](const RankView& r) { return fmt::format(",rank=\"{}\"", r.rank) + NodeLabels(r.node, r.host); };
  e.Family("dslaunch_rank_step", "gauge", "The last step the rank reported this generation.");
  for (const RankView& r : v.ranks)
    if (r.step >= 0) e.Sample(static_cast<double>(r.step), labels(r));
  e.Family("dslaunch_rank_step_seconds", "gauge", "The rank's mean step time over its agent's window.");
  for (const RankView& r : v.ranks)
    if (r.step_seconds > 0) e.Sample(r.step_seconds, labels(r));
  e.Family("dslaunch_rank_samples_per_second", "gauge", "Samples per second the rank's trainer reported.");
  for (const RankView& r : v.ranks)
    if (r.samples_per_second >= 0) e.Sample(r.samples_per_second, labels(r));
  e.Family("dslaunch_rank_save_stall_seconds", "gauge", "How long the rank's last save (snapshot or checkpoint) held up its training.");
  for (const RankView& r : v.ranks)
    if (r.save_stall_seconds >= 0) e.Sample(r.save_stall_seconds, labels(r));
}

}  // namespace

std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string MetricsText(const JobView& v) {
  Exposition e(v.job_id);
  e.Family("dslaunch_elapsed_seconds", "gauge", "Seconds since dslaunch started the job.");
  e.Sample(v.elapsed_seconds);
  e.Family("dslaunch_generation", "gauge", "The job's current generation (0 first, +1 per restart).");
  e.Sample(v.generation);
  e.Family("dslaunch_restarts_total", "counter", "Elastic restarts so far, job-wide.");
  e.Sample(v.restarts);
  e.Family("dslaunch_max_restarts", "gauge", "elastic.max_restarts: the job-wide restart budget.");
  e.Sample(v.max_restarts);
  e.Family("dslaunch_world_size", "gauge", "Ranks in the current generation.");
  e.Sample(v.world_size);
  e.Family("dslaunch_ranks_running", "gauge", "Workers started and not exited in the current generation.");
  e.Sample(v.ranks_running);
  e.Family("dslaunch_agents_registered", "gauge", "Agents registered and not lost.");
  e.Sample(v.agents_registered);
  e.Family("dslaunch_nodes_lost_total", "counter", "Agents lost so far (silent past heartbeat_timeout or disconnected).");
  e.Sample(v.nodes_lost);
  NodeFamilies(e, v);
  SnapshotFamilies(e, v);
  RankFamilies(e, v);
  return e.Take();
}

}  // namespace ds
