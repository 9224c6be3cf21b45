// CliOptions: everything the dslaunch command line says, as one struct with
// its defaults written inline, and ParseCli that fills it (CLI11 underneath).
// Option names follow DeepSpeed's launcher and torchrun so existing command
// lines keep working:
//
//   dslaunch [options] job.yaml
//   dslaunch [options] train.py [script args...]      (runs python3 -u train.py ...)
//   dslaunch [options] -- any command [args...]
//
// ParseCli is pure apart from reading the registered DSLAUNCH_* settings the
// launcher uses (DSLAUNCH_CONNECT_TIMEOUT, DSLAUNCH_AGENT_PATH,
// DSLAUNCH_STOP_GRACE, DSLAUNCH_COLOR): this is the one place the launcher
// reads them. It never exits. Plain data,
// not thread-safe to mutate concurrently.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "common/status.h"
#include "launcher/config/selection.h"

namespace ds {

struct CliOptions {
  // What to run: exactly one of job_file / command is set after parsing,
  // unless help or version was asked for.
  std::string job_file;              // positional *.yaml / *.yml job file
  std::vector<std::string> command;  // `train.py args...` or the argv after `--`
  bool command_after_dashdash = false;  // command came after `--` (never rewritten to python3)

  // Hosts.
  std::string hostfile;              // --hostfile/-H; "" = the local machine
  SelectionOptions selection;        // --include/-i, --exclude/-e, --num_nodes, --num_gpus

  // Launch.
  std::string launcher = "auto";     // --launcher: auto | local | ssh | pdsh
  std::string master_addr;           // --master_addr; "" = node rank 0's routable address
  int master_port = 0;               // --master_port; 0 = reserved per generation at launch
  std::string log_dir;               // --log-dir: per-rank log files; "" = none
  int max_restarts = -1;             // --max_restarts (torchrun's --max-restarts); -1 = job file's
  bool dry_run = false;              // --dry-run: print the plan, start nothing
  std::optional<int> ssh_port;       // --ssh_port: default for hosts without ssh_port=
  int fanout = 32;                   // --fanout: agents started in parallel at most
  double connect_timeout = kDefaultConnectTimeout;  // --connect-timeout seconds (default DSLAUNCH_CONNECT_TIMEOUT)
  bool connect_timeout_set = false;  // --connect-timeout was given (it then wins over the job file's ssh:)
  std::string agent_path;            // --agent-path: dsagent on the nodes (default DSLAUNCH_AGENT_PATH,
                                     //   else next to dslaunch)
  bool ship_agent = false;           // --ship-agent: copy dsagent to the nodes before starting it
  double stop_grace = kDefaultStopGrace;  // DSLAUNCH_STOP_GRACE (no flag): SIGTERM -> SIGKILL on the nodes
  std::string color = "auto";        // DSLAUNCH_COLOR (no flag): auto | always | never

  // DeepSpeed pass-through: appended to the script's arguments.
  bool deepspeed = false;            // --deepspeed (flag)
  std::string deepspeed_config;      // --deepspeed_config FILE

  // Informational.
  bool help = false;                 // --help was given (help_text holds the text)
  bool version = false;              // -v/--version was given
  std::string help_text;             // the full --help text
};

// Parses `args` (argv without the program name and without a subcommand
// word). On success returns the options; an error is InvalidArgument with a
// message that names the option and what was expected. With `require_job`
// false (e.g. `dslaunch check`), a missing job file / command is not an error.
Result<CliOptions> ParseCli(const std::vector<std::string>& args, bool require_job = true);

// The --help text (usage, options, subcommands are appended by main.cc).
std::string CliHelpText();

}  // namespace ds
