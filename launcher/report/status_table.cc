#include "launcher/report/status_table.h"

#include <fmt/format.h>

#include "launcher/report/status_line.h"

namespace ds {

std::string RoundTripText(double seconds) {
  if (seconds < 0) return "-";
  if (seconds < 1) return fmt::format("{:.1f}ms", seconds * 1e3);
  return fmt::format("{:.2f}s", seconds);
}

std::string SnapshotHeldText(const NodeSnapshotView& s) {
  if (s.step < 0) return "-";
  return fmt::format("step {} {} {:.1f} MB", s.step, s.in_memory ? "memory" : "disk",
                     static_cast<double>(s.bytes_held) / 1e6);
}

std::string RecoveryPointText(const JobView& v) {
  std::string out = v.recovery_point_step < 0 ? "recovery point: none yet (no save is on enough nodes to survive a loss)"
                                              : fmt::format("recovery point: step {}", v.recovery_point_step);
  if (v.steps_at_risk >= 0) out += fmt::format("; a node loss now would cost {} steps", v.steps_at_risk);
  if (v.worst_steps_at_risk >= 0) out += fmt::format(" (at worst so far {})", v.worst_steps_at_risk);
  return out;
}

std::string StatusTable(const JobView& v) {
  std::string out = fmt::format("job {} (dslaunch pid {}): {}\n", v.job_id, v.pid,
                                v.exit_code >= 0 ? fmt::format("ended, exit code {}", v.exit_code) : v.state);
  out += StatusLineText(v) + "\n";
  if (v.snapshots) out += RecoveryPointText(v) + "\n";
  auto node_row = [&](const auto& node, const auto& host, const auto& state, const auto& heard, const auto& rtt,
                      const std::string& snapshot) {
    std::string row = fmt::format("{:<5} {:<24} {:<8} {:<10} {:<8}", node, host, state, heard, rtt);
    if (v.snapshots) row += " " + snapshot;
    while (!row.empty() && row.back() == ' ') row.pop_back();
    return row + "\n";
  };
  out += node_row("NODE", "HOST", "STATE", "HEARD", "RTT", "SNAPSHOT");
  for (const NodeView& n : v.nodes)
    out += node_row(n.node, n.host, n.state,
                    n.heard_seconds_ago < 0 ? "-" : fmt::format("{:.1f}s ago", n.heard_seconds_ago),
                    RoundTripText(n.rtt_seconds), SnapshotHeldText(n.snapshot));
  if (v.ranks.empty()) return out;
  out += fmt::format("{:<5} {:<5} {:<24} {:>10} {:>10} {:>10}\n", "RANK", "NODE", "HOST", "STEP", "STEP_TIME",
                     "SAMPLES/S");
  for (const RankView& r : v.ranks)
    out += fmt::format("{:<5} {:<5} {:<24} {:>10} {:>10} {:>10}\n", r.rank, r.node, r.host,
                       r.step < 0 ? "-" : std::to_string(r.step),
                       r.step_seconds > 0 ? fmt::format("{:.3g}s", r.step_seconds) : "-",
                       r.samples_per_second >= 0 ? fmt::format("{:.0f}", r.samples_per_second) : "-");
  return out;
}

}  // namespace ds
