// What `dslaunch check` asks each host and how it judges the answers, without
// any SSH (pure, for tests): the probe script a node runs, a row of verdicts
// from its output, and the table. preflight.h does the SSH and the subcommand.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/version.h"
#include "launcher/config/hostfile.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

struct PreflightOptions {
  SshOptions ssh;                 // fan-out, connect timeout, config, host key policy, --ssh_port
  std::string agent_path;         // dsagent on the nodes (absolute)
  bool ship_agent = false;        // --ship-agent: the agent need not be installed
  std::string working_dir;        // must exist on every node; "" = not checked
  std::string master_addr;        // "" = the address ssh reached the first host at
  int master_port = 0;            // checked free on the first host when > 0
  double max_clock_skew = 2.0;    // seconds
  std::string local_version = DSLAUNCH_VERSION;  // expected in `dsagent --version`
  // The job, when one is given (a command or a job file's command:), checked
  // on every node from the working directory: its program found (on the PATH
  // a non-interactive SSH login has, or as a path), the Python script it runs
  // there, and `import_module` importable by its interpreter. An empty
  // job_command checks nothing and leaves the JOB column out.
  std::vector<std::string> job_command;
  std::string job_script;         // the .py a Python command runs, as written ("" = none)
  std::string import_module;      // e.g. "torch", when the script here imports it ("" = none)
};

// What to check of `command` (a worker's argv): the script a Python
// interpreter runs (the first argument ending in .py) and, when that file
// here (`script_text`) imports torch, "torch".
void JobChecksFor(const std::vector<std::string>& command, const std::string& script_text, PreflightOptions& o);

// One cell: a check's verdict and what to show.
struct PreflightCell {
  bool ok = true;
  std::string text;
};

struct PreflightRow {
  std::string host;
  PreflightCell ssh, agent, workdir, job, slots, iface, port, clock;  // job: "" when no job was checked
  std::vector<std::string> problems;  // "host: what is wrong", in column order
  bool ok() const { return problems.empty(); }
};

// The sh script run on a node; prints key=value lines (agent=, wd=, cpus=,
// gpu= once per GPU as "<index>,<name>,<MiB>" when nvidia-smi answers,
// gpuerr= when it fails, gpus=, own=, route=, port=); the clock is read by a
// separate round trip.
std::string ProbeScript(const PreflightOptions& options, const std::string& master_addr, bool is_first);

// Turns a probe's output into a row. `skew` = remote clock - local clock
// (seconds, measured at the middle of the round trip), `rtt` its uncertainty.
PreflightRow EvaluateProbe(const HostEntry& host, const std::string& peer, const std::string& probe_output,
                       double skew, double rtt, const PreflightOptions& options);

// A row for a host ssh could not reach: `error` is ssh's reason.
PreflightRow UnreachableRow(const HostEntry& host, const Status& error);

// The table, then one line per problem.
std::string FormatPreflightTable(const std::vector<PreflightRow>& rows);

}  // namespace ds
