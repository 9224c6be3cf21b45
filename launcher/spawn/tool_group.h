// ToolGroup: one run of an external launcher tool (pdsh, srun, mpirun) that
// starts the agents of several hosts at once, and an AgentHandle per host.
// The tool runs in its own process group; a reader thread takes its output
// line by line: a line the tool's parser recognises as a host's end marks
// that host ended (its handle's exit_fd(), an eventfd, turns readable), any
// other line is logged. When the tool exits, every host still running ends
// with it: exit 0 when the tool exited by itself and nobody asked to stop
// (tools that report hosts report the failed ones), the tool's own exit
// status when it reports no hosts at all, else -1.
// Terminate() on one host asks the tool's stop_host hook to end just that
// host while the others run; on the last host (or without a hook) it ends
// the tool: SIGTERM to its group, SIGKILL after the grace period.
// Handles are safe to use from any one thread each.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/spawn/spawner.h"

namespace ds {

struct ToolGroupSpec {
  std::string tool;                        // for logs and errors: "pdsh", "srun", "mpirun"
  std::string path;                        // the executable
  std::vector<std::string> argv;           // argv[0] included
  std::vector<std::pair<std::string, std::string>> env;  // set over the launcher's environment
  // Written to the tool's stdin, which is then closed; nullopt: stdin stays
  // open (and empty) until the group ends.
  std::optional<std::string> stdin_data;
  std::vector<std::string> hosts;          // one handle each, in this order
  double grace = 5.0;                      // seconds from SIGTERM to SIGKILL
  // A line of the tool's output (`is_err`: from stderr) that reports a
  // host's end: sets *host and *exit and returns true.
  std::function<bool(bool is_err, const std::string& line, std::string* host, int* exit)> host_ended;
  // A line that says nothing worth a warning (logged at Debug). Optional.
  std::function<bool(const std::string& line)> benign;
  // Ends `host` alone while the others run (the tool's pid given); false
  // when it cannot, and the host then stops with the whole group. Optional.
  std::function<bool(pid_t tool, const std::string& host)> stop_host;
};

// Starts the tool. One handle per spec.hosts entry; an error when the tool
// cannot be started at all (the message names it and the reason).
Result<std::vector<std::unique_ptr<AgentHandle>>> StartToolGroup(ToolGroupSpec spec);

// Start() of a spawner that runs one tool for all of `specs` (spec.hosts
// in their order): the tool's handles, or `tool`'s error (or the start's)
// for every spec, prefixed with its host.
std::vector<Result<std::unique_ptr<AgentHandle>>> StartForSpecs(const std::vector<AgentSpec>& specs,
                                                                Result<ToolGroupSpec> tool);

// `name` if it holds a '/' and is executable, else the first executable
// match on PATH; NotFound otherwise.
Result<std::string> FindExecutable(const std::string& name);

}  // namespace ds
