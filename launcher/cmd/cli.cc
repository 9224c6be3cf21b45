#include "launcher/cmd/cli.h"

#include <algorithm>

#include <CLI/CLI.hpp>

#include "common/env_registry.h"
#include "common/strings.h"
#include "launcher/config/hostfile.h"

namespace ds {
namespace {

// Text fields CLI11 fills before they are checked and converted.
struct RawOptions {
  std::string connect_timeout;
  int ssh_port = 0;
};

const char* kUsage =
    "dslaunch: start a job on every host of a hostfile, watch it, stop it all at the first failure.\n\n"
    "Usage:\n"
    "  dslaunch [options] job.yaml\n"
    "  dslaunch [options] train.py [script args...]     (runs python3 -u train.py ...)\n"
    "  dslaunch [options] -- command [args...]\n"
    "  dslaunch <subcommand> [options]                  (see Subcommands below)\n";

// kUsage already shows the usage lines; drop CLI11's generic one.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override { return ""; }
};

// Declares every option on `app`, bound to `o` / `raw`.
void DeclareOptions(CLI::App& app, CliOptions& o, RawOptions& raw) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.footer(
      "Hostfile lines: 'host slots=N [ssh_port=P] [user=NAME] [ENV_NAME=value ...]', '#' comments,\n"
      "IPv6 hosts in brackets; see hostfiles/example. Without --hostfile: this machine, one slot per\n"
      "GPU (else per core).");
  app.prefix_command();  // the first positional and everything after it belong to the job
  app.set_help_flag("-h,--help", "print this help and exit");
  app.add_flag("-v,--version", o.version, "print the version and exit");

  const char* hosts = "Hosts";
  app.add_option("-H,--hostfile", o.hostfile, "hostfile ('host slots=N' lines); default: this machine")
      ->group(hosts);
  app.add_option("-i,--include", o.selection.include, "only these hosts/slots, e.g. 'w0:0,2@w1'")->group(hosts);
  app.add_option("-e,--exclude", o.selection.exclude, "all but these hosts/slots, e.g. 'w0@w1:0'")->group(hosts);
  app.add_option("--num_nodes,--nnodes", o.selection.num_nodes, "use the first N selected hosts")
      ->check(CLI::PositiveNumber)->group(hosts);
  // Bounded like a hostfile's slots=: without a hostfile it sizes this machine's slots.
  app.add_option("--num_gpus,--nproc_per_node", o.selection.num_gpus, "workers per host (first N slots)")
      ->check(CLI::Range(1, kMaxSlotsPerHost))->group(hosts);

  const char* launch = "Launch";
  app.add_option("--launcher", o.launcher, "how agents start: auto, local, ssh or pdsh")
      ->check(CLI::IsMember({"auto", "local", "ssh", "pdsh"}))->capture_default_str()->group(launch);
  app.add_option("--master_addr", o.master_addr, "MASTER_ADDR for the workers (default: node rank 0)")
      ->group(launch);
  app.add_option("--master_port", o.master_port, "MASTER_PORT (default: a free port per generation)")
      ->check(CLI::Range(0, 65535))->group(launch);
  app.add_option("--log-dir,--log_dir", o.log_dir, "write one log file per rank into this directory")
      ->group(launch);
  app.add_option("--max_restarts,--max-restarts", o.max_restarts,
                 "restart on the nodes left up to N times (overrides elastic.max_restarts)")
      ->check(CLI::Range(0, 1 << 20))->group(launch);
  app.add_flag("--dry-run,--dry_run", o.dry_run, "print the launch plan and start nothing")->group(launch);
  app.add_option("--ssh_port,--ssh-port", raw.ssh_port, "SSH port for hosts without ssh_port=")
      ->check(CLI::Range(1, 65535))->group(launch);
  app.add_option("--fanout", o.fanout, "start at most N agents at once")
      ->check(CLI::PositiveNumber)->capture_default_str()->group(launch);
  app.add_option("--connect-timeout,--connect_timeout", raw.connect_timeout,
                 "SSH connect timeout per host, e.g. 10s (default DSLAUNCH_CONNECT_TIMEOUT)")
      ->group(launch);
  app.add_option("--agent-path,--agent_path", o.agent_path,
                 "dsagent on the nodes (default DSLAUNCH_AGENT_PATH, else next to dslaunch)")
      ->group(launch);
  app.add_flag("--ship-agent,--ship_agent", o.ship_agent, "copy dsagent to each node before starting it")
      ->group(launch);

  const char* ds = "DeepSpeed pass-through (appended to the script's arguments)";
  app.add_flag("--deepspeed", o.deepspeed, "pass --deepspeed to the script")->group(ds);
  app.add_option("--deepspeed_config", o.deepspeed_config, "pass --deepspeed_config FILE to the script")
      ->group(ds);
}

bool IsJobFile(const std::string& arg) {
  return arg.ends_with(".yaml") || arg.ends_with(".yml");
}

// The options CLI11 hands over as text: --connect-timeout, --ssh_port.
Status ApplyRaw(const RawOptions& raw, CliOptions& o) {
  if (!raw.connect_timeout.empty()) {
    auto s = ParseSeconds(raw.connect_timeout);
    if (!s || *s <= 0)
      return Status::InvalidArgument("--connect-timeout: expected a duration such as 10s or 500ms, got '" +
                                     raw.connect_timeout + "'");
    if (!InRange(*s, kConnectTimeoutRange))
      return Status::InvalidArgument("--connect-timeout: expected " + RangeText(kConnectTimeoutRange) + ", got '" +
                                     raw.connect_timeout + "'");
    o.connect_timeout = *s;
    o.connect_timeout_set = true;
  }
  if (raw.ssh_port != 0) o.ssh_port = raw.ssh_port;
  return Status::OK();
}

// With prefix_command(), CLI11 stops at the first positional (or at a
// `--` that comes before any) and leaves it and the rest in `rest`.
Status TakePositionals(const std::vector<std::string>& rest, bool require_job, CliOptions& o) {
  if (!rest.empty() && rest[0] == "--") {
    if (rest.size() == 1) return Status::InvalidArgument("expected a command after '--'");
    o.command.assign(rest.begin() + 1, rest.end());
    o.command_after_dashdash = true;
  } else if (!rest.empty() && StartsWith(rest[0], "-")) {
    return Status::InvalidArgument("unknown option '" + rest[0] + "' (see dslaunch --help)");
  } else if (!rest.empty() && IsJobFile(rest[0])) {
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

std::string CliHelpText() {
  CliOptions o;
  RawOptions raw;
  CLI::App app{kUsage, "dslaunch"};
  DeclareOptions(app, o, raw);
  return app.help();
}

Result<CliOptions> ParseCli(const std::vector<std::string>& args, bool require_job) {
  CliOptions o;
  DS_ASSIGN_OR_RETURN(o.connect_timeout, EnvDuration("DSLAUNCH_CONNECT_TIMEOUT"));
  o.agent_path = EnvString("DSLAUNCH_AGENT_PATH");
  DS_ASSIGN_OR_RETURN(o.stop_grace, EnvDuration("DSLAUNCH_STOP_GRACE"));
  o.color = EnvString("DSLAUNCH_COLOR");
  RawOptions raw;

  CLI::App app{kUsage, "dslaunch"};
  DeclareOptions(app, o, raw);
  std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes argv reversed
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    o.help_text = app.help();
    return o;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    return Status::InvalidArgument(msg + " (see dslaunch --help)");
  }
  if (o.version) return o;

  DS_RETURN_IF_ERROR(ApplyRaw(raw, o));
  DS_RETURN_IF_ERROR(TakePositionals(app.remaining(), require_job, o));
  DS_RETURN_IF_ERROR(AppendDeepSpeedFlags(o));
  return o;
}

}  // namespace ds
