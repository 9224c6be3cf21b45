// CliOptions: everything the dslaunch command line says, as one struct with
// its defaults written inline, and ParseCli that fills it (CLI11 underneath).
// Option names follow DeepSpeed's launcher and torchrun (both spellings,
// underscored and dashed) so existing command lines keep working:
//
//   dslaunch [options] job.yaml
//   dslaunch [options] train.py [script args...]      (DeepSpeed's form: python3 -u train.py ...)
//   dslaunch [options] -m pkg.mod [args...]            (torchrun's form: python3 -u -m pkg.mod ...)
//   dslaunch [options] -- any command [args...]
//
// The DeepSpeed/torchrun-only flags are declared and checked in
// cli_compat.cc. ParseCli is pure apart from reading the launcher's
// settings (DSLAUNCH_CONNECT_TIMEOUT, DSLAUNCH_AGENT_PATH,
// DSLAUNCH_STOP_GRACE, DSLAUNCH_COLOR, DSLAUNCH_STDIN_LIFELINE,
// DSLAUNCH_DEFAULT_HOSTFILE, and
// DeepSpeed's PYTHON_EXEC): this is the one place the launcher reads its
// environment. It never exits and prints nothing (notices come back in
// `notices`). Plain data, not thread-safe to mutate concurrently.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "common/status.h"
#include "launcher/join/rdzv_conf.h"
#include "launcher/config/selection.h"
#include "launcher/report/stream_spec.h"

namespace ds {

struct CliOptions {
  // What to run: exactly one of job_file / command is set after parsing,
  // unless help or version was asked for.
  std::string job_file;              // positional *.yaml / *.yml job file
  std::vector<std::string> command;  // `train.py args...`, `-m`'s module and args, or the argv after `--`
  bool command_after_dashdash = false;  // command came after `--` (never rewritten to python3)
  std::string python_exec = "python3";  // PYTHON_EXEC (DeepSpeed's): the interpreter for .py and -m
  bool module = false;               // -m/--module: run command[0] as `python -u -m` (torchrun)
  bool no_python = false;            // --no-python/--no_python: run command as is, even a .py
  bool no_local_rank = false;        // --no_local_rank: never append --local_rank=N (DeepSpeed's form
                                     //   otherwise does; see JobFromCli)

  // Hosts.
  std::string hostfile;              // --hostfile/-H; "" = default_hostfile if it exists, else this machine
  std::string default_hostfile = "/job/hostfile";  // DSLAUNCH_DEFAULT_HOSTFILE (DeepSpeed's path); used
                                     //   without --hostfile unless --launcher local
  SelectionOptions selection;        // --include/-i, --exclude/-e, --num_nodes N, --num_gpus N
  std::string nproc_mode;            // --nproc_per_node auto|gpu|cpu; "" = a number (selection.num_gpus)
                                     //   or not given. With a hostfile all three mean each host's slots=
  int elastic_min_nodes = -1;        // --nnodes MIN:MAX / --min_elastic_nodes; -1 = the job file's
  int elastic_max_nodes = -1;        // --nnodes MIN:MAX / --max_elastic_nodes; -1 = the job file's
  bool elastic_training = false;     // --elastic_training: max_restarts 100 unless set elsewhere

  // Launch.
  std::string launcher = "auto";     // --launcher: auto | local | ssh | pdsh (any case; lower-cased)
  std::vector<std::string> launcher_args;  // --launcher_args "ARGS", split like a shell: pdsh only
  bool force_multi = false;          // --force_multi: auto means ssh even for this machine alone
  // The per-node form (torchrun's; DeepSpeed's --no_ssh): every node runs
  // the same dslaunch; launcher/cmd/per_node.h resolves these with the
  // environment (PET_*, MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK).
  int node_rank = -1;                // --node_rank/--node-rank R; -1 = not given
  bool no_ssh = false;               // --no_ssh/--no-ssh (DeepSpeed): the per-node form
  std::string rdzv_endpoint;         // --rdzv-endpoint HOST:PORT: node 0's dslaunch (per-node form)
  // torchrun's c10d recipe: no --node_rank, --nnodes N or MIN:MAX > 1, and
  // --rdzv-endpoint (or --master_addr with --rdzv-backend c10d): ranks are
  // given as nodes join (per_node.h).
  bool rdzv_join = false;
  std::string rdzv_id;               // --rdzv-id (with rdzv_join): part of the job id
  RendezvousConf rdzv_conf;          // --rdzv-conf (with rdzv_join): join_timeout, last_call_timeout, is_host
  // torchrun's etcd rendezvous: --rdzv-backend etcd (or etcd-v2) with
  // --rdzv-endpoint HOST[:PORT] (one endpoint, port 2379 by default, as
  // torchrun reads it) names the coordinator's etcd (the job file's
  // coordinator.etcd, which it must not also set); never node 0.
  std::vector<std::string> coordinator_etcd;  // HOST:PORT; empty = not given
  std::string coordinator_etcd_flags;         // those flags as typed, for messages
  bool insecure = false;             // --insecure: per-node form without DSLAUNCH_SECRET_FILE off loopback
  std::string master_addr;           // --master_addr; "" = node rank 0's routable address
  int master_port = 0;               // --master_port; 0 = reserved per generation at launch
  std::string log_dir;               // --log-dir / --enable_each_rank_log: per-rank log files; "" = none
  StreamSpec redirects;              // -r/--redirects (torchrun's): these streams go to the per-rank files only
  bool pty = false;                  // --pty: workers' stdout and stderr are pseudo-terminals
  bool tee = false;                  // -t/--tee given: per-rank files (in a fresh directory without --log-dir)
  std::string streams_flag;          // -r/-t as typed, for the notice naming that directory
  std::vector<int> local_ranks_filter;  // --local-ranks-filter 0,2: only these local ranks' lines reach
                                     //   the terminal (log files keep all); empty = every rank
  bool save_pid = false;             // --save_pid: /tmp/<pid>.deepspeed holds dslaunch's pid while it runs
  bool bind_cores = false;           // --bind_cores_to_rank (or --bind_core_list)
  std::string bind_core_list;        // --bind_core_list LIST, e.g. "0-3,8-11" (checked by MakePlan)
  int metrics_port = -1;             // --metrics-port P: Prometheus /metrics on P (0 = any); -1 = the job file's
  std::string metrics_addr;          // --metrics-addr ADDR: where /metrics listens; "" = the job file's (loopback)
  double progress_interval = -1;     // --progress-interval S: a progress line every S s when stderr is no
                                     //   terminal (0 = none); -1 = the job file's (60)
  int max_restarts = -1;             // --max_restarts (torchrun's --max-restarts); -1 = job file's
  bool dry_run = false;              // --dry-run: print the plan, start nothing
  std::string resume_job;            // --resume JOB / --standby JOB: take over JOB (job_takeover.h)
  bool standby = false;              // --standby: first wait while JOB's coordinator lives
  int standby_index = -1;            // --standby-index K: the leader started this standby K (secret on stdin)
  std::string standby_cwd;           // --standby-cwd DIR: the leader's working directory, where K runs
  std::vector<std::string> args;     // the arguments as given (a standby is started with them again)
  bool dry_run_short = false;        // --dry-run=short: one line per node (dry_run.h)
  std::optional<int> ssh_port;       // --ssh_port: default for hosts without ssh_port=
  int fanout = 32;                   // --fanout: agents started in parallel at most
  int fanout_tree = 0;               // --fanout-tree K: agents start K agents each (0 = off)
  std::string fanout_tree_flag = "--fanout-tree";  // its spelling as typed, for the launch's messages
  double connect_timeout = kDefaultConnectTimeout;  // --connect-timeout seconds (default DSLAUNCH_CONNECT_TIMEOUT)
  bool connect_timeout_set = false;  // --connect-timeout was given (it then wins over the job file's ssh:)
  std::string agent_path;            // --agent-path: dsagent on the nodes (default DSLAUNCH_AGENT_PATH,
                                     //   else next to dslaunch)
  bool ship_agent = false;           // --ship-agent: copy dsagent to the nodes before starting it
  double stop_grace = kDefaultStopGrace;  // DSLAUNCH_STOP_GRACE (no flag): SIGTERM -> SIGKILL on the nodes
  std::string color = "auto";        // DSLAUNCH_COLOR (no flag): auto | always | never
  bool stdin_lifeline = false;       // DSLAUNCH_STDIN_LIFELINE (no flag): stdin closing stops the job
                                     //   (`dslaunch cluster run` relies on it through docker exec -i)

  // DeepSpeed pass-through: appended to the script's arguments.
  bool deepspeed = false;            // --deepspeed (flag)
  std::string deepspeed_config;      // --deepspeed_config FILE

  // Informational.
  bool help = false;                 // --help was given (help_text holds the text)
  bool version = false;              // -v/--version was given
  std::string help_text;             // the full --help text
  std::vector<std::string> notices;  // lines for stderr (without "dslaunch: "), e.g. the torchrun
                                     //   flags accepted and ignored
};

// Parses `args` (argv without the program name and without a subcommand
// word). On success returns the options; an error is InvalidArgument with a
// message that names the option and what was expected. With `require_job`
// false (e.g. `dslaunch check`), a missing job file / command is not an error.
Result<CliOptions> ParseCli(const std::vector<std::string>& args, bool require_job = true);

// The --help text (usage, options, subcommands are appended by main.cc).
std::string CliHelpText();

// `dslaunch completion bash`: the script for these options and `subcommands`
// (launcher/cmd/completion.h).
struct CompletionCommand;
std::string CliBashCompletion(const std::vector<CompletionCommand>& subcommands);

}  // namespace ds
