// dssim: simulated agents against one real coordinator, to measure and test
// the control plane at thousands of nodes on one machine (scenario.h).
//   dssim --agents 4096 [--slots 1] [--heartbeat-interval 1] [--heartbeat-timeout 5]
//         [--steady 5] [--step 1] [--no-store] [--step-timeout 120] [--watch]
//         [--etcd http://HOST:PORT] [--json FILE]
// Prints the report; exit 0 when every check passed, 1 when one failed, 2 on
// bad arguments or when the run could not start.
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>

#include "sim/scenario.h"

int main(int argc, char** argv) {
  ds::sim::ScenarioOptions o;
  std::string json_path;
  bool no_store = false;
  CLI::App app{"dssim: simulated dsagents against one real dslaunch coordinator"};
  app.add_option("--agents", o.agents, "simulated agents (nodes), at least 3")->check(CLI::Range(3, 1000000));
  app.add_option("--slots", o.slots, "workers per node")->check(CLI::Range(1, 1024));
  app.add_option("--heartbeat-interval", o.heartbeat_interval, "seconds")->check(CLI::Range(0.01, 60.0));
  app.add_option("--heartbeat-timeout", o.heartbeat_timeout, "seconds")->check(CLI::Range(0.05, 600.0));
  app.add_option("--steady", o.steady_seconds, "seconds of the CPU/memory window")->check(CLI::Range(0.1, 600.0));
  app.add_option("--step", o.step_seconds, "workers step this often in the window (0 = no steps, no summaries)")
      ->check(CLI::Range(0.0, 60.0));
  app.add_option("--step-timeout", o.step_timeout, "seconds any step may take")->check(CLI::Range(1.0, 3600.0));
  app.add_flag("--no-store", no_store, "skip the store bootstrap step");
  app.add_flag("--watch", o.watch, "the coordinator also serves /metrics and `dslaunch status` and builds the "
                                   "status line every 250 ms, as dslaunch does (its address on stderr)");
  app.add_option("--etcd", o.etcd, "the coordinator leads the job in this etcd (http://HOST:PORT) and writes its "
                                   "state there at every transition, as with coordinator failover");
  app.add_option("--json", json_path, "also write the report as JSON to FILE");
  CLI11_PARSE(app, argc, argv);
  o.store = !no_store;
  if (o.heartbeat_timeout <= o.heartbeat_interval) {
    std::fprintf(stderr, "dssim: --heartbeat-timeout must be longer than --heartbeat-interval\n");
    return 2;
  }
  auto r = ds::sim::RunScenario(o);
  if (!r.ok()) {
    std::fprintf(stderr, "dssim: %s\n", r.status().message().c_str());
    return 2;
  }
  std::fputs(ds::sim::ReportText(*r).c_str(), stdout);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << ds::sim::ReportJson(*r) << "\n";
    if (!out) {
      std::fprintf(stderr, "dssim: cannot write %s\n", json_path.c_str());
      return 2;
    }
  }
  return r->ok() ? 0 : 1;
}
