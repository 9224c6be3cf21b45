#include "launcher/cmd/cli.h"

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/env_registry.h"
#include "common/strings.h"
#include "launcher/cmd/cli_compat.h"
#include "launcher/cmd/completion.h"
#include "launcher/cmd/option_words.h"
#include "launcher/config/hostfile.h"

namespace ds {
namespace {

using cli::RawOptions;

const char* kUsage =
    "dslaunch: start a job on every host of a hostfile, watch it, stop it all at the first failure.\n\n"
    "Usage:\n"
    "  dslaunch [options] job.yaml\n"
    "  dslaunch [options] train.py [script args...]     DeepSpeed's form: runs python3 -u train.py ...; with\n"
    "                                                   --deepspeed/--deepspeed_config each worker also gets\n"
    "                                                   --local_rank=N (not with --no_local_rank)\n"
    "  dslaunch [options] -m pkg.mod [args...]          torchrun's form: runs python3 -u -m pkg.mod ...; workers\n"
    "                                                   read LOCAL_RANK, no --local_rank argument\n"
    "  dslaunch [options] --no-python prog [args...]    torchrun's form: runs prog as is, even a .py\n"
    "  dslaunch [options] -- command [args...]          any command, as is\n"
    "  dslaunch <subcommand> [options]                  (see Subcommands below)\n"
    "PYTHON_EXEC (DeepSpeed's variable) replaces python3. A job file's command runs as written; it may\n"
    "set local_rank_arg: true.\n";

// kUsage already shows the usage lines; drop CLI11's generic one.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override { return ""; }
};

// Help, footer and version.
void DeclareHelp(CLI::App& app, CliOptions& o) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.footer(
      "Hostfile lines: 'host slots=N [ssh_port=P] [user=NAME] [ENV_NAME=value ...]', '#' comments,\n"
      "IPv6 hosts in brackets, OpenMPI's max_slots= ignored; see hostfiles/example. Without --hostfile:\n"
      "inside a Slurm allocation (SLURM_JOB_ID) its nodes (SLURM_JOB_NODELIST), else\n"
      "DSLAUNCH_DEFAULT_HOSTFILE (/job/hostfile) when it exists and --launcher is not local, else this\n"
      "machine, one slot per GPU (else per core).");
  app.prefix_command();  // the first positional and everything after it belong to the job
  app.set_help_flag("-h,--help", "print this help and exit");
  app.add_flag("-v,--version", o.version, "print the version and exit");
}

// Which hosts and how many workers on each (group "Hosts").
void DeclareSelection(CLI::App& app, CliOptions& o, RawOptions& raw) {
  const char* hosts = "Hosts";
  app.add_option("-H,--hostfile", o.hostfile, "hostfile ('host slots=N' lines); default: DSLAUNCH_DEFAULT_HOSTFILE if it exists, else this machine")
      ->type_name("FILE")
      ->group(hosts);
  app.add_option("-i,--include", o.selection.include, "only these hosts/slots, e.g. 'w0:0,2@w1'")
      ->type_name("SPEC")->group(hosts);
  app.add_option("-e,--exclude", o.selection.exclude, "all but these hosts/slots, e.g. 'w0@w1:0'")
      ->type_name("SPEC")->group(hosts);
  app.add_option("--num_nodes,--num-nodes,--nnodes", raw.num_nodes,
                 "N: use the first N selected hosts; MIN:MAX: elastic bounds (elastic.min_nodes, max_nodes)")
      ->type_name("N|MIN:MAX")
      ->group(hosts);
  app.add_option("--num_gpus,--num-gpus,--num_accelerators,--num-accelerators,--nproc_per_node,--nproc-per-node",
                 raw.num_gpus,
                 "workers per host: N (the first N slots), or auto / gpu / cpu: without a hostfile this machine's "
                 "GPUs if any else cores / its GPUs / its cores; with a hostfile all three mean each host's slots=")
      ->type_name("N|auto|gpu|cpu")
      ->group(hosts);
}

// The rest are group "Launch", declared in the order --help lists them.
constexpr const char* kLaunch = "Launch";

// How agents start and where the workers meet.
void DeclareRendezvous(CLI::App& app, CliOptions& o, RawOptions& raw) {
  app.add_option("--launcher", raw.launcher,
                 "how agents start: auto (default), local, ssh, pdsh, slurm (srun) or openmpi (mpirun), in any case")
      ->type_name("{" + fmt::format("{}", fmt::join(cli::LauncherNames(), ",")) + "}")
      ->group(kLaunch);
  app.add_option("--master_addr,--master-addr", o.master_addr, "MASTER_ADDR for the workers (default: node rank 0)")
      ->type_name("ADDR")
      ->group(kLaunch);
  app.add_option("--master_port,--master-port", raw.master_port,
                 "MASTER_PORT, 0-65535 (default 0: a free port per generation)")
      ->type_name("PORT")
      ->group(kLaunch);
}

// What the job shows: per-rank logs, metrics, progress lines.
void DeclareOutput(CLI::App& app, CliOptions& o) {
  app.add_option("--log-dir,--log_dir", o.log_dir, "per-rank log files in this directory: rank<N>.stdout.log, rank<N>.stderr.log")
      ->type_name("DIR")
      ->group(kLaunch);
  app.add_option("--metrics-port,--metrics_port", o.metrics_port,
                 "serve Prometheus metrics at http://ADDR:P/metrics while the job runs (0: any free port)")
      ->type_name("P")->check(CLI::Range(0, 65535))->group(kLaunch);
  app.add_option("--metrics-addr,--metrics_addr", o.metrics_addr,
                 "the numeric address /metrics listens on (default 127.0.0.1: this machine only)")
      ->type_name("ADDR")->group(kLaunch);
  app.add_option("--progress-interval,--progress_interval", o.progress_interval,
                 "seconds between progress lines when stderr is no terminal (default 60; 0: none)")
      ->type_name("S")->check(CLI::Range(0.0, 1e9))->group(kLaunch);
}

// How the job runs: restarts (elastic), terminals, a dry run.
void DeclareRun(CLI::App& app, CliOptions& o, RawOptions& raw) {
  app.add_option("--max_restarts,--max-restarts", raw.max_restarts,
                 "restart on the nodes left up to N times (overrides elastic.max_restarts)")
      ->type_name("N")
      ->group(kLaunch);
  app.add_flag("--pty", o.pty,
               "give each worker's stdout and stderr a pseudo-terminal, so colours and progress bars show as in "
               "a local run")
      ->group(kLaunch);
  auto* resume = app.add_option("--resume", o.resume_job,
                                "take over job JOB whose dslaunch was lost, its workers still running (same command "
                                "line, same host; the job file's coordinator: etcd:)")
                     ->type_name("JOB")
                     ->group(kLaunch);
  app.add_option_function<std::string>(
         "--standby",
         [&o](const std::string& job) {
           o.resume_job = job;
           o.standby = true;
         },
         "wait while job JOB's dslaunch lives, then take the job over as --resume does")
      ->type_name("JOB")
      ->excludes(resume)
      ->group(kLaunch);
  // What the leader starts its standbys with (launcher/cmd/standby.h); not for people.
  app.add_option("--standby-index", o.standby_index)->check(CLI::Range(0, 64))->group("");
  app.add_option("--standby-cwd", o.standby_cwd)->group("");
  app.add_flag("--dry-run,--dry_run", raw.dry_run,
               "print the launch plan and start nothing (every variable of every node; =short: one line per node)")
      ->type_name("[=short]")
      ->group(kLaunch);
}

// How the agents get onto the nodes: ssh, the fan-out, dsagent itself.
void DeclareAgentStart(CLI::App& app, CliOptions& o, RawOptions& raw) {
  app.add_option("--ssh_port,--ssh-port", raw.ssh_port, "SSH port for hosts without ssh_port=")
      ->type_name("PORT")->group(kLaunch);
  app.add_option("--fanout", raw.fanout, "start at most N agents at once (default 32)")
      ->type_name("N")->group(kLaunch);
  app.add_option("--fanout-tree,--fanout_tree", raw.fanout_tree,
                 "started agents start the next ones, K each, over their own ssh (--launcher ssh)")
      ->type_name("K")->group(kLaunch);
  app.add_option("--connect-timeout,--connect_timeout", raw.connect_timeout,
                 "SSH connect timeout per host, e.g. 10s (default DSLAUNCH_CONNECT_TIMEOUT)")
      ->type_name("DURATION")
      ->group(kLaunch);
  app.add_option("--agent-path,--agent_path", o.agent_path,
                 "dsagent on the nodes (default DSLAUNCH_AGENT_PATH, else next to dslaunch)")
      ->type_name("PATH")
      ->group(kLaunch);
  app.add_flag("--ship-agent,--ship_agent", o.ship_agent, "copy dsagent to each node before starting it")
      ->group(kLaunch);
}

// Declares every option on `app`, bound to `o` / `raw`, group by group (the
// order is --help's).
void DeclareOptions(CLI::App& app, CliOptions& o, RawOptions& raw) {
  DeclareHelp(app, o);
  DeclareSelection(app, o, raw);
  DeclareRendezvous(app, o, raw);
  DeclareOutput(app, o);
  DeclareRun(app, o, raw);
  DeclareAgentStart(app, o, raw);
  const char* ds = "DeepSpeed pass-through (appended to the script's arguments)";
  app.add_flag("--deepspeed", o.deepspeed, "pass --deepspeed to the script")->group(ds);
  app.add_option("--deepspeed_config", o.deepspeed_config, "pass --deepspeed_config FILE to the script")
      ->type_name("FILE")
      ->group(ds);
  cli::DeclareCompatOptions(app, o, raw);
}

bool IsJobFile(const std::string& arg) {
  return arg.ends_with(".yaml") || arg.ends_with(".yml");
}

// With prefix_command(), CLI11 stops at the first positional (or at a
// `--` that comes before any) and leaves it and the rest in `rest`.
Status TakePositionals(const std::vector<std::string>& rest, bool require_job, CliOptions& o) {
  if (o.module && (rest.empty() || rest == std::vector<std::string>{"--"}))
    return Status::InvalidArgument("-m/--module: expected a module name (dslaunch -m pkg.mod args...)");
  if (!rest.empty() && rest[0] == "--") {
    if (rest.size() == 1) return Status::InvalidArgument("expected a command after '--'");
    o.command.assign(rest.begin() + 1, rest.end());
    o.command_after_dashdash = true;
  } else if (!rest.empty() && StartsWith(rest[0], "-")) {
    return Status::InvalidArgument("unknown option '" + rest[0] + "' (see dslaunch --help)");
  } else if (!rest.empty() && o.module) {
    o.command = rest;  // the module, then its arguments
  } else if (!rest.empty() && IsJobFile(rest[0])) {
    if (o.no_python)
      return Status::InvalidArgument("--no-python applies to a script or program, not to the job file " + rest[0]);
    if (rest.size() > 1)
      return Status::InvalidArgument("unexpected '" + rest[1] + "' after the job file " + rest[0] +
                                     "; put the command in the job file or use -- command");
    o.job_file = rest[0];
  } else if (!rest.empty()) {
    o.command = rest;
  } else if (require_job) {
    return Status::InvalidArgument(
        "expected a job file (job.yaml), a script (train.py ...) or '-- command ...' (see dslaunch --help)");
  }
  return Status::OK();
}

// --deepspeed / --deepspeed_config, appended to the script's arguments.
Status AppendDeepSpeedFlags(CliOptions& o) {
  if (!o.deepspeed && o.deepspeed_config.empty()) return Status::OK();
  if (o.command.empty())
    return Status::InvalidArgument("--deepspeed/--deepspeed_config apply to a script; with a job file, "
                                   "put them in its command");
  if (o.deepspeed) o.command.push_back("--deepspeed");
  if (!o.deepspeed_config.empty()) {
    o.command.push_back("--deepspeed_config");
    o.command.push_back(o.deepspeed_config);
  }
  return Status::OK();
}

}  // namespace

std::string CliBashCompletion(const std::vector<CompletionCommand>& subcommands) {
  CliOptions o;
  RawOptions raw;
  CLI::App app{kUsage, "dslaunch"};
  DeclareOptions(app, o, raw);
  return BashCompletion("dslaunch", app, subcommands);
}

std::string CliHelpText() {
  CliOptions o;
  RawOptions raw;
  CLI::App app{kUsage, "dslaunch"};
  DeclareOptions(app, o, raw);
  return app.help();
}

namespace {

// CLI11's own messages name an option by its first name ("--num_gpus" for
// "--nproc-per-node"): put back the word as typed.
std::string AsTyped(std::string msg, const CLI::App& app, const std::vector<cli::TypedOption>& typed) {
  for (const cli::TypedOption& t : typed) {
    const CLI::Option* opt = app.get_option_no_throw(t.name);
    if (opt == nullptr || opt->get_name() == t.typed) continue;
    if (const size_t at = msg.find(opt->get_name()); at != std::string::npos)
      msg.replace(at, opt->get_name().size(), t.typed);
  }
  return msg;
}

}  // namespace

Result<CliOptions> ParseCli(const std::vector<std::string>& args, bool require_job) {
  CliOptions o;
  o.args = args;
  DS_ASSIGN_OR_RETURN(o.connect_timeout, EnvDuration("DSLAUNCH_CONNECT_TIMEOUT"));
  o.agent_path = EnvString("DSLAUNCH_AGENT_PATH");
  DS_ASSIGN_OR_RETURN(o.stop_grace, EnvDuration("DSLAUNCH_STOP_GRACE"));
  o.color = EnvString("DSLAUNCH_COLOR");
  o.stdin_lifeline = EnvBool("DSLAUNCH_STDIN_LIFELINE");
  o.default_hostfile = EnvString("DSLAUNCH_DEFAULT_HOSTFILE");
  if (auto py = GetAnyEnv("PYTHON_EXEC"); py && !py->empty()) o.python_exec = *py;
  RawOptions raw;

  CLI::App app{kUsage, "dslaunch"};
  DeclareOptions(app, o, raw);
  DS_ASSIGN_OR_RETURN(cli::OptionWords words, cli::ResolveOptionWords(args, app, "dslaunch --help"));
  std::vector<std::string> rev(words.args.rbegin(), words.args.rend());  // CLI11 takes argv reversed
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    o.help_text = app.help();
    return o;
  } catch (const CLI::ParseError& e) {
    return Status::InvalidArgument(AsTyped(e.what(), app, words.options) + " (see dslaunch --help)");
  }
  const std::vector<std::string> rest = app.remaining();
  if (o.version) return o;

  DS_RETURN_IF_ERROR(cli::ApplyRaw(raw, words.options, o));
  if (!raw.dry_run.empty()) {
    if (raw.dry_run == "true") raw.dry_run = "full";  // given bare (CLI11's value for a flag)
    if (raw.dry_run != "full" && raw.dry_run != "short")
      return Status::InvalidArgument("--dry-run=" + raw.dry_run +
                                     ": expected --dry-run, --dry-run=short or --dry-run=full (see dslaunch --help)");
    o.dry_run = true;
    o.dry_run_short = raw.dry_run == "short";
  }
  DS_RETURN_IF_ERROR(TakePositionals(rest, require_job, o));
  DS_RETURN_IF_ERROR(AppendDeepSpeedFlags(o));
  return o;
}

}  // namespace ds
