// RunJob: `dslaunch run`, the launch path: merges the env files, picks the
// spawner (local when every host is this machine), narrows an elastic start
// to the reachable hosts, starts the coordinator and one dsagent per node,
// streams worker output, turns SIGINT/SIGTERM/SIGHUP into a stop of this
// job's workers on every node (nothing else), and prints the summary.
// Blocks until the job is over. Call once per process (it handles signals).
#pragma once

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/cmd/per_node.h"
#include "launcher/config/plan.h"

namespace ds {

// The job's exit code (0, the first failing worker's code, or 128+signal),
// or the error that kept it from running: InvalidArgument for bad input
// (env files, nothing to run, a launcher this build lacks, an unusable log
// directory), Unavailable for a launch failure (unreachable hosts, no route
// to the first host, the coordinator cannot listen).
// With `per_node` (its node rank 0): the per-node form's node 0, whose
// coordinator listens on the rendezvous port for the other nodes' agents
// (launcher/cmd/per_node.h).
Result<int> RunJob(const LaunchPlan& plan, const CliOptions& cli, const PerNodeLaunch* per_node = nullptr);

// Whether the summary, which goes to stderr, is in colour: DSLAUNCH_COLOR
// (`mode`, CliOptions::color) "always" or "never" decides, "auto" colours
// only a terminal (as the output's rank prefixes do on stdout).
bool SummaryInColor(const std::string& mode, bool stderr_is_tty);

}  // namespace ds
