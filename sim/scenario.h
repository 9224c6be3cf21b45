// The control-plane scenario dssim runs (bench/scale, the `scale` test):
// N simulated agents against one real coordinator, through
//   1. rendezvous: all connect at once, register, get their Assign;
//   2. a steady window: the coordinator's CPU per second and memory while
//      every agent heartbeats, its workers stepping (progress summaries);
//   3. the store: every worker runs a NCCL-style bootstrap (sim_store.h);
//   4. a silent agent: detected (heartbeat_timeout), the generation stopped,
//      the next one assigned to the N-1 others, ranks renumbered;
//   5. a dead agent (its connection closes): the next generation on N-2;
//   6. every worker exits 0: the job ends, every agent gets its Shutdown.
// Each step is checked (everyone registered once, every rank given once,
// WORLD_SIZE right, the silent and the dead node left out, the job's end as
// the coordinator saw it) and timed. Failed checks are listed, not thrown:
// the report says what was measured up to there.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "sim/coordinator_process.h"

namespace ds::sim {

struct ScenarioOptions {
  int agents = 1024;
  int slots = 1;
  double heartbeat_interval = 1.0;
  double heartbeat_timeout = 5.0;
  double steady_seconds = 5.0;  // the CPU/memory window
  double step_seconds = 1.0;    // workers beat a step this often in the window (progress summaries); 0 = never
  bool store = true;
  double step_timeout = 120.0;  // seconds any one step may take before the run fails
  bool watch = false;           // --watch: the coordinator also serves /metrics and `dslaunch status` (sim_watch.h)
  std::string etcd;             // --etcd: the coordinator leads in this etcd and writes its state there
};

struct ScenarioReport {
  ScenarioOptions options;
  double to_registered = -1;   // start -> the last registration (node 0's Reserve)
  double to_assigned = -1;     // start -> the last Assign received
  int connect_retries = 0;     // agents' connects tried again (reset by an overflowing listen queue)
  double cpu_rendezvous = -1;  // the coordinator's CPU seconds from start to all assigned
  double cpu_per_second = -1;  // the coordinator's CPU seconds per second, steady window
  double progress_per_second = -1;  // Progress summaries the agents sent per second, steady window
  long rss_before_kib = 0;     // before any agent connected
  long rss_running_kib = 0;    // all registered, in the steady window
  long peak_rss_kib = 0;       // VmHWM at the end
  double store_seconds = -1;   // the store pattern, first request -> last rank done
  int store_ranks = 0;
  double detect_seconds = -1;  // the silent agent's last heartbeat -> the first Stop
  double silent_restart_seconds = -1;  // that Stop -> all of the next generation assigned
  double kill_stop_seconds = -1;       // the dead agent's close -> the first Stop
  double kill_restart_seconds = -1;    // the close -> all of the next generation assigned
  double cpu_restart = -1;             // the coordinator's CPU seconds for that stop and restart
  CoordinatorEnd end;
  std::vector<std::string> failures;   // empty: every check passed
  bool ok() const { return failures.empty(); }
};

struct FleetSeen;
// The checks every generation's assignment must pass, each failure appended
// to `failures`: `expected_nodes` agents got it once each, none of
// `excluded`, every rank 0..expected_nodes*slots-1 given once, and every
// worker the same WORLD_SIZE.
void CheckGeneration(const FleetSeen& seen, int gen, int expected_nodes, int slots, const std::vector<int>& excluded,
                     std::vector<std::string>& failures);

// Error only when the run could not start (fork, listen, fd limits).
Result<ScenarioReport> RunScenario(const ScenarioOptions& options);

// One JSON object; and the same as lines of text for a terminal.
std::string ReportJson(const ScenarioReport& r);
std::string ReportText(const ScenarioReport& r);

}  // namespace ds::sim
